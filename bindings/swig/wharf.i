/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wharf.i - SWIG interface over include/wharf/wharf.h.
 *
 * This is the low-level layer that language bindings stand on; it is not an API for users.
 * Java: `swig -java -package dev.wharf -I<repo>/include wharf.i` generates package-private
 * classes (WharfNative, WharfNativeJNI, WharfNativeConstants and one proxy per struct) in
 * the API's own package, dev.wharf, where only the hand-written API of
 * java/src/main/java/dev/wharf can reach them (java/build.sh).
 *
 * Shape of this file
 *   1. Only an explicit list of wharf.h's functions is wrapped (everything else is ignored
 *      by default), so a function added to wharf.h is never exposed with a signature nobody
 *      checked.
 *   2. Functions with handle out-parameters (`wharf_runtime** out`, ...) are replaced by
 *      small language-neutral C helpers (`wharf_swig_*`, section "Helpers") that return the
 *      handle and hand their error back through a `wharf_status** status_out` parameter.
 *   3. Errors: every `wharf_status*` a wrapped function returns, and every status a helper
 *      leaves in `*status_out`, is turned into a target-language exception carrying the
 *      code and the message, and is freed right there (in the typemaps). No status ever
 *      reaches the target language, so none can leak. Python: add the equivalent typemaps
 *      under SWIGPYTHON; the helpers and the function list are language-neutral.
 *   4. Strings cross as UTF-8 (not JNI's "modified UTF-8"), so names outside the Basic
 *      Multilingual Plane, as found in safetensors files, round-trip unchanged.
 *
 * Arrays of handles and of declarations (the constants and states of
 * wharf_container_options, the containers of wharf_session_create) are built one element at
 * a time in small owning lists (wharf_swig_decl_list, wharf_swig_state_list,
 * wharf_swig_container_list) that the helpers hand to the library.
 *
 * Callbacks: fold functions are wrapped for Java (wharf_swig_container_update_fold,
 * wharf_swig_weight_store_update_fold, wharf_swig_replica_group_update_fold and _update_ranks_fold): the library calls an update's fold during the update
 * call, and the trampoline calls back into Java (attaching the thread if the library ever
 * calls it from another one); the Java callback's failure comes back as a status made with
 * wharf_status_create. The log callback is wrapped for one receiver only,
 * dev.wharf.WharfLog.log (wharf_swig_log_to_java: a global reference to that class, kept for
 * the life of the process, and a trampoline that attaches library threads for the call).
 * User-constant release functions are not wrapped: Wharf calls them on its own worker threads
 * at times it does not report, which would need global references with a lifetime Wharf
 * cannot bound.
 */

#if defined(SWIGJAVA)
%module WharfNative
#else
%module wharf_native
#endif

%{
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The experimental tier too (models); only the functions listed below are wrapped. */
#define WHARF_EXPERIMENTAL
#include "wharf/wharf.h"

/* One dimension of a shape. SWIG sees only the name (not that it is int64_t), so the casts
 * it generates for shape arguments name this type rather than its guess at int64_t's type. */
typedef int64_t wharf_swig_dim;
typedef int64_t wharf_swig_bucket;  /* a graph bucket size (wharf_swig_model_enable_graphs) */
#define WHARF_SWIG_MAX_BUCKETS 64
%}

%include <stdint.i>
%include <exception.i>

/* wharf.h's export and result macros mean nothing to SWIG (the C wrappers it generates, and
 * the helpers above, are compiled with the real ones and use every status). */
#define WHARF_API
#define WHARF_NODISCARD

/* Enums cross as plain integer constants; the hand-written layer maps them to its own types. */
#if defined(SWIGJAVA)
%include <enumtypeunsafe.swg>
%javaconst(1);
/* C literals Java cannot read (0x1u). */
%javaconstvalue(1) WHARF_CONSTANT_DERIVED;
%javaconstvalue(1) WHARF_VIEW_READ_ONLY;
#endif

/* 64-bit unsigned quantities (byte counts, generation ids) cross as signed 64-bit integers
 * (Java `long`): every value Wharf produces is far below 2^63. */
%apply long long { uint64_t };
%apply long long { size_t };

/* ======================================================================================
 * Whitelist: ignore every function, then enable the ones below by name.
 * ====================================================================================== */
%rename("$ignore", %$isfunction, regextarget=1) "^wharf_";

%define WHARF_WRAP(NAME)
%rename("%s") NAME;
%enddef

/* versions, dtypes */
WHARF_WRAP(wharf_code_name)
WHARF_WRAP(wharf_version)
WHARF_WRAP(wharf_version_number)
WHARF_WRAP(wharf_abi_version)
WHARF_WRAP(wharf_dtype_size)
WHARF_WRAP(wharf_dtype_name)
/* runtime */
WHARF_WRAP(wharf_runtime_backend)
WHARF_WRAP(wharf_runtime_get_device_info)
WHARF_WRAP(wharf_runtime_synchronize)
WHARF_WRAP(wharf_runtime_get_memory_stats)
WHARF_WRAP(wharf_runtime_reset_peak)
/* constant maps */
WHARF_WRAP(wharf_constant_map_find)
WHARF_WRAP(wharf_constant_map_num_entries)
WHARF_WRAP(wharf_constant_map_num_metadata_entries)
WHARF_WRAP(wharf_constant_map_save_safetensors)
/* containers */
WHARF_WRAP(wharf_container_update)
WHARF_WRAP(wharf_container_swap)
WHARF_WRAP(wharf_container_free_inactive)
WHARF_WRAP(wharf_container_generation)
WHARF_WRAP(wharf_container_num_constants)
WHARF_WRAP(wharf_container_get_constant_info)
/* runs */
WHARF_WRAP(wharf_run_get_tensor)
WHARF_WRAP(wharf_run_generation)
/* weight store (0.2.0) */
WHARF_WRAP(wharf_weight_store_get_stats)
WHARF_WRAP(wharf_weight_store_update)
WHARF_WRAP(wharf_weight_store_swap)
/* sessions (0.2.0) */
WHARF_WRAP(wharf_session_reset)
WHARF_WRAP(wharf_session_state_bytes)
/* 0.3.0 */
WHARF_WRAP(wharf_container_name)
WHARF_WRAP(wharf_dtype_bits)
WHARF_WRAP(wharf_constant_map_set_metadata)
WHARF_WRAP(wharf_container_update_from_file)
WHARF_WRAP(wharf_weight_store_update_from_file)
/* models (0.3.0, experimental tier) */
WHARF_WRAP(wharf_model_container)
WHARF_WRAP(wharf_model_num_inputs)
WHARF_WRAP(wharf_model_num_outputs)
WHARF_WRAP(wharf_model_input_name)
/* model packages (0.3.0, experimental tier) */
WHARF_WRAP(wharf_model_package_name)
WHARF_WRAP(wharf_model_package_max_seq_len)
WHARF_WRAP(wharf_model_package_store)
WHARF_WRAP(wharf_model_package_num_methods)
WHARF_WRAP(wharf_model_package_method_name)
WHARF_WRAP(wharf_model_package_num_method_inputs)
WHARF_WRAP(wharf_model_package_num_method_outputs)
/* offloaders and replica groups (0.3.0, experimental tier) */
WHARF_WRAP(wharf_offloader_num_layers)
WHARF_WRAP(wharf_offloader_num_layer_constants)
WHARF_WRAP(wharf_offloader_layer_constant)
WHARF_WRAP(wharf_offloader_get_budget)
WHARF_WRAP(wharf_run_begin_offload)
WHARF_WRAP(wharf_run_mark_offload_issued)
WHARF_WRAP(wharf_run_end_offload)
WHARF_WRAP(wharf_replica_group_num_replicas)
WHARF_WRAP(wharf_replica_group_update)
WHARF_WRAP(wharf_replica_group_swap)
WHARF_WRAP(wharf_replica_group_free_inactive)
WHARF_WRAP(wharf_replica_group_get_stats)
WHARF_WRAP(wharf_replica_group_update_ranks)
/* CUDA graphs of a model's runs (0.3.0, experimental tier); enabling them:
 * wharf_swig_model_enable_graphs */
WHARF_WRAP(wharf_model_get_graph_stats)
WHARF_WRAP(wharf_model_get_graph_bucket)
/* state arenas and batched runs (0.3.0, experimental tier); beginning a batch:
 * wharf_swig_run_begin_batch */
WHARF_WRAP(wharf_run_num_sessions)
WHARF_WRAP(wharf_run_get_slot_indices)
WHARF_WRAP(wharf_session_slot)
WHARF_WRAP(wharf_container_get_state_arena_stats)
/* the helpers of this file */
%rename("%s", regextarget=1) "^wharf_swig_";
/* The functions that free a handle: helpers under the Java names of the originals (see
 * "Freeing a handle once" below). */
%rename(wharf_runtime_free) wharf_swig_runtime_free;
%rename(wharf_constant_map_free) wharf_swig_constant_map_free;
%rename(wharf_container_free) wharf_swig_container_free;
%rename(wharf_run_end) wharf_swig_run_end;
%rename(wharf_weight_store_free) wharf_swig_weight_store_free;
%rename(wharf_session_free) wharf_swig_session_free;
%rename(wharf_model_free) wharf_swig_model_free;
%rename(wharf_model_package_free) wharf_swig_model_package_free;
%rename(wharf_offloader_free) wharf_swig_offloader_free;
%rename(wharf_replica_group_free) wharf_swig_replica_group_free;

/* Struct members that cannot cross as they are: raw pointers and fixed arrays are read
 * through the %extend accessors below, callbacks are not wrapped (see the top). */
%ignore wharf_tensor_view::data;
%ignore wharf_tensor_view::shape;
%ignore wharf_tensor_view::strides;
%ignore wharf_device_info::name;
%ignore wharf_memory_stats::current;
%ignore wharf_memory_stats::peak;
%ignore wharf_constant_info::shape;
%ignore wharf_update_options::fold;
%ignore wharf_update_options::fold_user;
%ignore wharf_update_options::progress;      /* wharf_swig_update_options_set_progress */
%ignore wharf_update_options::progress_user;
%ignore wharf_update_options::wait_stream; /* a cudaStream_t: wharf_swig_update_options_set_wait_stream */
%ignore wharf_state_info;                  /* not wrapped yet */
%immutable wharf_tensor_view::struct_size;
%immutable wharf_tensor_view::byte_offset;
/* Structs only the helpers use. */
%ignore wharf_model_options;
%ignore wharf_model_package_options;       /* wharf_swig_model_package_load_progress */
%ignore wharf_model_package_tensor_info;   /* wharf_swig_model_package_tensor_* */
%ignore wharf_graph_options;               /* wharf_swig_model_enable_graphs takes its fields */
%ignore wharf_graph_stats::last_eager_reason; /* last_eager_reason_text() */
%ignore wharf_graph_bucket_info::shapes;      /* shapes_text() */
%ignore wharf_graph_stats::bucket_dim;        /* bucket_dim_text() */
%ignore wharf_constant_decl;
%ignore wharf_state_decl;
%ignore wharf_container_options;
%ignore wharf_offloader_options;           /* built by wharf_swig_offloader_options_new */

/* Output structs are filled by the library; the target language only reads them. */
%immutable wharf_tensor_view::dtype;
%immutable wharf_tensor_view::device_type;
%immutable wharf_tensor_view::device_index;
%immutable wharf_tensor_view::ndim;
%immutable wharf_device_info::struct_size;
%immutable wharf_device_info::backend;
%immutable wharf_device_info::device_index;
%immutable wharf_device_info::total_memory;
%immutable wharf_device_info::free_memory;
%immutable wharf_device_info::compute_major;
%immutable wharf_device_info::compute_minor;
%immutable wharf_memory_stats::struct_size;
%immutable wharf_memory_stats::device_current;
%immutable wharf_memory_stats::device_peak;
%immutable wharf_memory_stats::pinned_host_current;
%immutable wharf_memory_stats::pinned_host_peak;
%immutable wharf_constant_info::struct_size;
%immutable wharf_constant_info::fqn;
%immutable wharf_constant_info::dtype;
%immutable wharf_constant_info::ndim;
%immutable wharf_constant_info::placement;
%immutable wharf_constant_info::flags;
%immutable wharf_constant_info::nbytes;
%immutable wharf_weight_store_stats::struct_size;
%immutable wharf_weight_store_stats::num_unique_constants;
%immutable wharf_weight_store_stats::unique_bytes;
%immutable wharf_weight_store_stats::num_references;
%immutable wharf_weight_store_stats::saved_bytes;
%immutable wharf_offloader_budget::struct_size;
%immutable wharf_offloader_budget::num_offloaded_layers;
%immutable wharf_offloader_budget::bytes_per_step;
%immutable wharf_offloader_budget::h2d_bytes_per_second;
%immutable wharf_offloader_budget::h2d_source;
%immutable wharf_offloader_budget::copy_us;
%immutable wharf_offloader_budget::compute_us;
%immutable wharf_offloader_budget::exposed_us;
%immutable wharf_replica_group_stats::struct_size;
%immutable wharf_replica_group_stats::num_replicas;
%immutable wharf_replica_group_stats::nccl_version;
%immutable wharf_replica_group_stats::num_updates;
%immutable wharf_replica_group_stats::num_swaps;
%immutable wharf_replica_group_stats::source_bytes;
%immutable wharf_replica_group_stats::broadcast_bytes;
%immutable wharf_replica_group_stats::num_broadcasts;
%immutable wharf_state_arena_stats::struct_size;
%immutable wharf_state_arena_stats::num_slots;
%immutable wharf_state_arena_stats::num_slots_used;
%immutable wharf_state_arena_stats::num_slots_free;
%immutable wharf_state_arena_stats::bytes;
/* wharf_graph_stats and wharf_graph_bucket_info keep their setters (the generated classes
 * are package-private): the conversion into dev.wharf.GraphStats / GraphBucket is tested on
 * structs filled in Java, since only a CUDA model fills them. struct_size is the
 * constructor's. */
%immutable wharf_graph_stats::struct_size;
%immutable wharf_graph_bucket_info::struct_size;
/* Not used by the Java layer: no setter (a generated one would copy the string and leak it,
 * SWIG warning 451). */
%immutable wharf_offloader_options::layer_pattern;
/* struct_size of the options structs is set by their constructors (below). */
%immutable wharf_runtime_options::struct_size;
%immutable wharf_update_options::struct_size;
%immutable wharf_session_options::struct_size;

/* ======================================================================================
 * Java typemaps
 * ====================================================================================== */
#if defined(SWIGJAVA)

%{
/* The Java class that carries a Wharf error (override with -D when compiling the wrapper).
 * Its (int code, byte[] utf8Message) constructor is package-private and called only here. */
#ifndef WHARF_SWIG_JAVA_EXCEPTION
#define WHARF_SWIG_JAVA_EXCEPTION "dev/wharf/WharfException"
#endif

/* A Java byte[] holding the bytes of `s` (no terminator); NULL (with no exception) for a
 * NULL `s`, NULL with an OutOfMemoryError pending when the array cannot be made. */
static jbyteArray wharf_swig_utf8_bytes(JNIEnv* jenv, const char* s) {
  size_t len;
  jbyteArray bytes;
  if (!s) return NULL;
  len = strlen(s);
  if (len > (size_t)INT_MAX) len = (size_t)INT_MAX;
  bytes = (*jenv)->NewByteArray(jenv, (jsize)len);
  if (!bytes) return NULL;
  (*jenv)->SetByteArrayRegion(jenv, bytes, 0, (jsize)len, (const jbyte*)s);
  return bytes;
}

/* Takes ownership of `status`: throws it as a WharfException (unless another exception is
 * already pending, which then wins) and frees it. NULL is a no-op. */
static void wharf_swig_throw_status(JNIEnv* jenv, wharf_status* status) {
  jclass cls;
  jmethodID ctor;
  jbyteArray message;
  jthrowable exception;
  if (!status) return;
  if (!(*jenv)->ExceptionCheck(jenv)) {
    message = wharf_swig_utf8_bytes(jenv, wharf_status_message(status));
    if (message) {
      cls = (*jenv)->FindClass(jenv, WHARF_SWIG_JAVA_EXCEPTION);
      if (cls) {
        ctor = (*jenv)->GetMethodID(jenv, cls, "<init>", "(I[B)V");
        if (ctor) {
          exception = (jthrowable)(*jenv)->NewObject(jenv, cls, ctor,
                                                     (jint)wharf_status_code(status), message);
          if (exception) {
            (*jenv)->Throw(jenv, exception);
            (*jenv)->DeleteLocalRef(jenv, exception);
          }
        }
        (*jenv)->DeleteLocalRef(jenv, cls);
      }
      (*jenv)->DeleteLocalRef(jenv, message);
    }
  }
  wharf_status_free(status);
}
%}

/* Never finalize: proxies of Wharf's plain structs are freed with delete(), by the
 * hand-written layer, in finally blocks. */
%typemap(javafinalize) SWIGTYPE ""

/* Nothing generated is reachable from user code: it is generated into the API's own package
 * (swig -package dev.wharf) with package-private classes, so only the hand-written classes
 * can call a native method or turn an integer into an address. (SWIG writes the constants
 * interface as "public interface"; java/build.sh makes it package-private too.) */
%pragma(java) jniclassclassmodifiers="final class"
%pragma(java) moduleclassmodifiers="final class"
%typemap(javaclassmodifiers) SWIGTYPE, SWIGTYPE *, SWIGTYPE &, SWIGTYPE &&, SWIGTYPE [] "final class"
%typemap(javaclassmodifiers) enum SWIGTYPE "final class"

/* --- wharf_status* results: void in Java, thrown as WharfException --------------------- */
%typemap(jni) wharf_status* "void"
%typemap(jtype) wharf_status* "void"
%typemap(jstype) wharf_status* "void"
%typemap(javaout) wharf_status* { $jnicall; }
%typemap(out) wharf_status* %{ wharf_swig_throw_status(jenv, $1); %}

/* --- wharf_status** status_out: hidden; a status left there is thrown and freed -------- */
%typemap(in, numinputs=0) wharf_status** status_out (wharf_status* status_temp = NULL) %{
  $1 = &status_temp;
%}
%typemap(argout) wharf_status** status_out %{
  wharf_swig_throw_status(jenv, *$1);
%}

/* --- const char*: Java String <-> NUL-terminated UTF-8 --------------------------------- */
%typemap(jni) const char* "jbyteArray"
%typemap(jtype) const char* "byte[]"
%typemap(jstype) const char* "String"
%typemap(javain) const char* "$module.cString($javainput)"
%typemap(javaout) const char* { return $module.javaString($jnicall); }
%typemap(in) const char* %{
  $1 = NULL;
  if ($input) {
    jsize $1_len = (*jenv)->GetArrayLength(jenv, $input);
    if ($1_len < 1) {
      SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException, "string is not NUL-terminated");
      return $null;
    }
    $1 = ($1_ltype)(*jenv)->GetByteArrayElements(jenv, $input, NULL);
    if (!$1) return $null;
    if ($1[$1_len - 1] != '\0') {
      (*jenv)->ReleaseByteArrayElements(jenv, $input, (jbyte*)$1, JNI_ABORT);
      SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException, "string is not NUL-terminated");
      return $null;
    }
  }
%}
%typemap(freearg) const char* %{
  if ($1) (*jenv)->ReleaseByteArrayElements(jenv, $input, (jbyte*)$1, JNI_ABORT);
%}
%typemap(out) const char* %{ $result = wharf_swig_utf8_bytes(jenv, $1); %}

%pragma(java) modulecode=%{
  /** NUL-terminated UTF-8 bytes of {@code s}; null for null. */
  static byte[] cString(String s) {
    if (s == null) return null;
    if (s.indexOf('\0') >= 0)
      throw new IllegalArgumentException("string contains a NUL character at index " + s.indexOf('\0') + ": " + s);
    byte[] utf8 = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    return java.util.Arrays.copyOf(utf8, utf8.length + 1);
  }

  /** The string whose UTF-8 bytes are {@code utf8}; null for null. */
  static String javaString(byte[] utf8) {
    return utf8 == null ? null : new String(utf8, java.nio.charset.StandardCharsets.UTF_8);
  }
%}

/* --- replica group ids: Java byte[] <-> (bytes, length) --------------------------------
 * Copied through a local 256-byte buffer (nothing to release); the helpers check the length
 * (a WharfException naming it). In: the first 256 bytes are copied. Out: written back only
 * when no exception is pending. */
%typemap(jni) (const unsigned char* id_in, int32_t id_len), (unsigned char* id_out, int32_t id_len) "jbyteArray"
%typemap(jtype) (const unsigned char* id_in, int32_t id_len), (unsigned char* id_out, int32_t id_len) "byte[]"
%typemap(jstype) (const unsigned char* id_in, int32_t id_len), (unsigned char* id_out, int32_t id_len) "byte[]"
%typemap(javain) (const unsigned char* id_in, int32_t id_len), (unsigned char* id_out, int32_t id_len) "$javainput"
%define WHARF_SWIG_ID_IN(ARGS)
%typemap(in) ARGS (unsigned char id_buf[sizeof(wharf_replica_group_id)]) %{
  if (!$input) {
    SWIG_JavaThrowException(jenv, SWIG_JavaNullPointerException, "replica group id bytes are null");
    return $null;
  }
  memset(id_buf, 0, sizeof id_buf);
  {
    jsize id_n = (*jenv)->GetArrayLength(jenv, $input);
    $2 = (int32_t)id_n;
    (*jenv)->GetByteArrayRegion(jenv, $input, 0, id_n < (jsize)sizeof id_buf ? id_n : (jsize)sizeof id_buf,
                                (jbyte*)id_buf);
  }
  $1 = id_buf;
%}
%enddef
WHARF_SWIG_ID_IN((const unsigned char* id_in, int32_t id_len))
WHARF_SWIG_ID_IN((unsigned char* id_out, int32_t id_len))
%typemap(argout) (unsigned char* id_out, int32_t id_len) %{
  if (!(*jenv)->ExceptionCheck(jenv) && $2 == (int32_t)sizeof id_buf$argnum)
    (*jenv)->SetByteArrayRegion(jenv, $input, 0, (jsize)sizeof id_buf$argnum, (const jbyte*)id_buf$argnum);
%}

/* --- shapes: Java long[] -> (const wharf_swig_dim* shape, int32_t ndim) -----------------
 * Copied into a local array, so there is nothing to release. Its two guards (null, more
 * than WHARF_MAX_DIMS) return early, before the freearg code of earlier arguments; the
 * calling layer rules both out first, so in practice this typemap never fails. */
%typemap(jni) (const wharf_swig_dim* shape, int32_t ndim) "jlongArray"
%typemap(jtype) (const wharf_swig_dim* shape, int32_t ndim) "long[]"
%typemap(jstype) (const wharf_swig_dim* shape, int32_t ndim) "long[]"
%typemap(javain) (const wharf_swig_dim* shape, int32_t ndim) "$javainput"
%typemap(in) (const wharf_swig_dim* shape, int32_t ndim) (wharf_swig_dim dims[WHARF_MAX_DIMS]) %{
  if (!$input) {
    SWIG_JavaThrowException(jenv, SWIG_JavaNullPointerException, "shape is null");
    return $null;
  }
  $2 = (int32_t)(*jenv)->GetArrayLength(jenv, $input);
  if ($2 > WHARF_MAX_DIMS) {
    SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException, "shape has more than WHARF_MAX_DIMS dimensions");
    return $null;
  }
  (*jenv)->GetLongArrayRegion(jenv, $input, 0, $2, (jlong*)dims);
  $1 = dims;
%}
%{
/* The shape typemap hands a jlong array to C as int64_t dimensions. */
typedef char wharf_swig_jlong_is_int64[(sizeof(jlong) == sizeof(wharf_swig_dim)) ? 1 : -1];
%}

/* --- graph bucket sizes: Java long[] (or null) -> (const wharf_swig_bucket* sizes, uint32_t num_sizes)
 * Copied into a local array of at most WHARF_SWIG_MAX_BUCKETS (the calling layer checks the
 * count first); null is no sizes. */
%typemap(jni) (const wharf_swig_bucket* sizes, uint32_t num_sizes) "jlongArray"
%typemap(jtype) (const wharf_swig_bucket* sizes, uint32_t num_sizes) "long[]"
%typemap(jstype) (const wharf_swig_bucket* sizes, uint32_t num_sizes) "long[]"
%typemap(javain) (const wharf_swig_bucket* sizes, uint32_t num_sizes) "$javainput"
%typemap(in) (const wharf_swig_bucket* sizes, uint32_t num_sizes) (wharf_swig_bucket buckets[WHARF_SWIG_MAX_BUCKETS]) %{
  $1 = NULL;
  $2 = 0;
  if ($input) {
    jsize n = (*jenv)->GetArrayLength(jenv, $input);
    if (n > WHARF_SWIG_MAX_BUCKETS) {
      SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException, "more than WHARF_SWIG_MAX_BUCKETS bucket sizes");
      return $null;
    }
    (*jenv)->GetLongArrayRegion(jenv, $input, 0, n, (jlong*)buckets);
    $1 = buckets;
    $2 = (uint32_t)n;
  }
%}

/* --- JNIEnv for the Java-only helpers ----------------------------------------------------- */
%typemap(in, numinputs=0) JNIEnv* jenv %{ $1 = jenv; %}

/* --- java.nio.ByteBuffer in and out ---------------------------------------------------- */
%typemap(jni) jobject buffer "jobject"
%typemap(jtype) jobject buffer "java.nio.ByteBuffer"
%typemap(jstype) jobject buffer "java.nio.ByteBuffer"
%typemap(jni) jobject wharf_swig_byte_view "jobject"
%typemap(jtype) jobject wharf_swig_byte_view "java.nio.ByteBuffer"
%typemap(jstype) jobject wharf_swig_byte_view "java.nio.ByteBuffer"

/* --- Freeing a handle once ----------------------------------------------------------------
 * A handle's pointer proxy (SWIGTYPE_p_wharf_run, ...) holds the address under its own
 * lock. The functions that free or end a handle (their parameter named `freed`) take the
 * address out of the proxy and leave 0 there, so passing the same proxy again passes NULL,
 * which every free and wharf_run_end accept as a no-op: a double end through one proxy
 * (issue 23: a class planted in dev.wharf ended a run twice and crashed the JVM) cannot free
 * twice. The jar is sealed as well (java/build.sh), so no class outside it reaches this layer. */
%typemap(javabody) SWIGTYPE * %{
  private long swigCPtr; // guarded by this; 0 once freed through this proxy

  $javaclassname(long cPtr, @SuppressWarnings("unused") boolean futureUse) {
    swigCPtr = cPtr;
  }

  $javaclassname() {
    swigCPtr = 0;
  }

  static long getCPtr($javaclassname obj) {
    if (obj == null) return 0;
    synchronized (obj) {
      return obj.swigCPtr;
    }
  }

  /** The address, left 0 in the proxy: the native object is being freed. */
  static long takeCPtr($javaclassname obj) {
    if (obj == null) return 0;
    synchronized (obj) {
      long cPtr = obj.swigCPtr;
      obj.swigCPtr = 0;
      return cPtr;
    }
  }
%}
%typemap(javain) SWIGTYPE* freed "$javaclassname.takeCPtr($javainput)"

/* --- a fold callback's Java bridge (dev.wharf.FoldCall) ---------------------------------- */
%typemap(jni) jobject fold_call "jobject"
%typemap(jtype) jobject fold_call "Object"
%typemap(jstype) jobject fold_call "Object"

/* --- a progress callback's Java bridge (dev.wharf.ProgressCall) -------------------------- */
%typemap(jni) jobject progress_call "jobject"
%typemap(jtype) jobject progress_call "Object"
%typemap(jstype) jobject progress_call "Object"

#endif /* SWIGJAVA */

/* Allocating constructors of the output structs (below) report failure, not a NULL proxy. */
%exception wharf_tensor_view::wharf_tensor_view {
  $action
  if (!result) SWIG_exception(SWIG_MemoryError, "out of memory allocating wharf_tensor_view");
}
%exception wharf_device_info::wharf_device_info {
  $action
  if (!result) SWIG_exception(SWIG_MemoryError, "out of memory allocating wharf_device_info");
}
%exception wharf_memory_stats::wharf_memory_stats {
  $action
  if (!result) SWIG_exception(SWIG_MemoryError, "out of memory allocating wharf_memory_stats");
}
%exception wharf_constant_info::wharf_constant_info {
  $action
  if (!result) SWIG_exception(SWIG_MemoryError, "out of memory allocating wharf_constant_info");
}
%exception wharf_runtime_options::wharf_runtime_options {
  $action
  if (!result) SWIG_exception(SWIG_MemoryError, "out of memory allocating wharf_runtime_options");
}
%exception wharf_update_options::wharf_update_options {
  $action
  if (!result) SWIG_exception(SWIG_MemoryError, "out of memory allocating wharf_update_options");
}
%exception wharf_session_options::wharf_session_options {
  $action
  if (!result) SWIG_exception(SWIG_MemoryError, "out of memory allocating wharf_session_options");
}
%exception wharf_offloader_budget::wharf_offloader_budget {
  $action
  if (!result) SWIG_exception(SWIG_MemoryError, "out of memory allocating wharf_offloader_budget");
}
%exception wharf_replica_group_stats::wharf_replica_group_stats {
  $action
  if (!result) SWIG_exception(SWIG_MemoryError, "out of memory allocating wharf_replica_group_stats");
}
%exception wharf_state_arena_stats::wharf_state_arena_stats {
  $action
  if (!result) SWIG_exception(SWIG_MemoryError, "out of memory allocating wharf_state_arena_stats");
}
%exception wharf_graph_stats::wharf_graph_stats {
  $action
  if (!result) SWIG_exception(SWIG_MemoryError, "out of memory allocating wharf_graph_stats");
}
%exception wharf_graph_bucket_info::wharf_graph_bucket_info {
  $action
  if (!result) SWIG_exception(SWIG_MemoryError, "out of memory allocating wharf_graph_bucket_info");
}
%exception wharf_weight_store_stats::wharf_weight_store_stats {
  $action
  if (!result) SWIG_exception(SWIG_MemoryError, "out of memory allocating wharf_weight_store_stats");
}

/* ======================================================================================
 * The header, with its experimental tier (the functions above say which are wrapped)
 * ====================================================================================== */
#define WHARF_EXPERIMENTAL
%include "wharf/wharf.h"

/* ======================================================================================
 * Struct accessors (language-neutral)
 * ====================================================================================== */

/* Options structs start initialised with the library's defaults, through the sized inits
 * (this wrapper's struct size, so a newer library never writes past it). */
%extend wharf_runtime_options {
  wharf_runtime_options() {
    wharf_runtime_options* o = (wharf_runtime_options*)calloc(1, sizeof(*o));
    if (o) wharf_runtime_options_init_sized(o, sizeof(*o));
    return o;
  }
  ~wharf_runtime_options() { free($self); }
}

%extend wharf_update_options {
  wharf_update_options() {
    wharf_update_options* o = (wharf_update_options*)calloc(1, sizeof(*o));
    if (o) wharf_update_options_init_sized(o, sizeof(*o));
    return o;
  }
  ~wharf_update_options() { free($self); }
}

%extend wharf_session_options {
  wharf_session_options() {
    wharf_session_options* o = (wharf_session_options*)calloc(1, sizeof(*o));
    if (o) wharf_session_options_init_sized(o, sizeof(*o));
    return o;
  }
  ~wharf_session_options() { free($self); }
}

/* A view filled by wharf_constant_map_find / wharf_run_get_tensor. Its shape and data point into
 * the map or the run: read them while that object is alive, and copy what you keep. */
%extend wharf_tensor_view {
  wharf_tensor_view() {
    wharf_tensor_view* v = (wharf_tensor_view*)calloc(1, sizeof(wharf_tensor_view));
    if (v) v->struct_size = (uint32_t)sizeof(wharf_tensor_view);
    return v;
  }
  ~wharf_tensor_view() { free($self); }
  /** The data pointer as an integer address (0 for NULL). */
  int64_t data_address() const { return (int64_t)(intptr_t)$self->data; }
  /** Dimension i (0 <= i < ndim), or -1 outside that range. */
  int64_t dim(int32_t i) const {
    return (i >= 0 && i < $self->ndim && $self->shape) ? $self->shape[i] : -1;
  }
  /** 1 when the view is contiguous row-major (strides NULL, or equal to the row-major ones
   *  apart from size-1 dimensions, or no element at all) and starts at data, 0 otherwise. */
  int32_t contiguous() const {
    int64_t expect = 1;
    int32_t i;
    if ($self->byte_offset != 0 && $self->struct_size >= sizeof(wharf_tensor_view)) return 0;
    if (!$self->strides) return 1;
    for (i = 0; i < $self->ndim; ++i)
      if ($self->shape[i] == 0) return 1;
    for (i = $self->ndim - 1; i >= 0; --i) {
      if ($self->shape[i] != 1 && $self->strides[i] != expect) return 0;
      expect *= $self->shape[i];
    }
    return 1;
  }
}

/* Output structs: struct_size is set to this header's size on construction. */
%extend wharf_device_info {
  wharf_device_info() {
    wharf_device_info* o = (wharf_device_info*)calloc(1, sizeof(*o));
    if (o) o->struct_size = (uint32_t)sizeof(*o);
    return o;
  }
  ~wharf_device_info() { free($self); }
  /** The device's name. wharf.h does not promise a terminator, so the last byte is forced to NUL. */
  const char* device_name() {
    $self->name[sizeof($self->name) - 1] = '\0';
    return $self->name;
  }
}

%extend wharf_memory_stats {
  wharf_memory_stats() {
    wharf_memory_stats* o = (wharf_memory_stats*)calloc(1, sizeof(*o));
    if (o) o->struct_size = (uint32_t)sizeof(*o);
    return o;
  }
  ~wharf_memory_stats() { free($self); }
  /** current[tag], or 0 for a tag outside 0..WHARF_MEM_TAG_CAPACITY-1. */
  uint64_t current_at(int32_t tag) const {
    return (tag >= 0 && tag < WHARF_MEM_TAG_CAPACITY) ? $self->current[tag] : 0;
  }
  /** peak[tag], or 0 for a tag outside 0..WHARF_MEM_TAG_CAPACITY-1. */
  uint64_t peak_at(int32_t tag) const {
    return (tag >= 0 && tag < WHARF_MEM_TAG_CAPACITY) ? $self->peak[tag] : 0;
  }
}

%extend wharf_offloader_budget {
  wharf_offloader_budget() {
    wharf_offloader_budget* o = (wharf_offloader_budget*)calloc(1, sizeof(*o));
    if (o) o->struct_size = (uint32_t)sizeof(*o);
    return o;
  }
  ~wharf_offloader_budget() { free($self); }
}
%extend wharf_replica_group_stats {
  wharf_replica_group_stats() {
    wharf_replica_group_stats* o = (wharf_replica_group_stats*)calloc(1, sizeof(*o));
    if (o) o->struct_size = (uint32_t)sizeof(*o);
    return o;
  }
  ~wharf_replica_group_stats() { free($self); }
}
%extend wharf_state_arena_stats {
  wharf_state_arena_stats() {
    wharf_state_arena_stats* o = (wharf_state_arena_stats*)calloc(1, sizeof(*o));
    if (o) o->struct_size = (uint32_t)sizeof(*o);
    return o;
  }
  ~wharf_state_arena_stats() { free($self); }
}
%extend wharf_graph_stats {
  wharf_graph_stats() {
    wharf_graph_stats* o = (wharf_graph_stats*)calloc(1, sizeof(*o));
    if (o) o->struct_size = (uint32_t)sizeof(*o);
    return o;
  }
  ~wharf_graph_stats() { free($self); }
  /** Why the last eager run was not replayed ("" if none). The last byte is forced to NUL. */
  const char* last_eager_reason_text() {
    $self->last_eager_reason[sizeof($self->last_eager_reason) - 1] = '\0';
    return $self->last_eager_reason;
  }
  /** The dimension padded to buckets ("" for exact shapes). The last byte is forced to NUL. */
  const char* bucket_dim_text() {
    $self->bucket_dim[sizeof($self->bucket_dim) - 1] = '\0';
    return $self->bucket_dim;
  }
}
%extend wharf_graph_bucket_info {
  wharf_graph_bucket_info() {
    wharf_graph_bucket_info* o = (wharf_graph_bucket_info*)calloc(1, sizeof(*o));
    if (o) o->struct_size = (uint32_t)sizeof(*o);
    return o;
  }
  ~wharf_graph_bucket_info() { free($self); }
  /** The inputs' dtypes and shapes. The last byte is forced to NUL. */
  const char* shapes_text() {
    $self->shapes[sizeof($self->shapes) - 1] = '\0';
    return $self->shapes;
  }
}
%extend wharf_weight_store_stats {
  wharf_weight_store_stats() {
    wharf_weight_store_stats* o = (wharf_weight_store_stats*)calloc(1, sizeof(*o));
    if (o) o->struct_size = (uint32_t)sizeof(*o);
    return o;
  }
  ~wharf_weight_store_stats() { free($self); }
}

%extend wharf_constant_info {
  wharf_constant_info() {
    wharf_constant_info* o = (wharf_constant_info*)calloc(1, sizeof(*o));
    if (o) o->struct_size = (uint32_t)sizeof(*o);
    return o;
  }
  ~wharf_constant_info() { free($self); }
  /** Dimension i (0 <= i < ndim), or -1 outside that range. */
  int64_t dim(int32_t i) const {
    return (i >= 0 && i < $self->ndim && $self->shape) ? $self->shape[i] : -1;
  }
}

/* ======================================================================================
 * Helpers (language-neutral C). Each replaces a function whose out-parameters do not map
 * onto a return value: the handle is returned, and on failure it is NULL and the status
 * is left in *status_out (which the typemaps throw and free).
 * ====================================================================================== */

%{
/* A growable list of constant declarations that owns copies of its names and shapes. */
struct wharf_swig_decl_list {
  wharf_constant_decl* decls;
  size_t size;
  size_t capacity;
};

/* A growable list of state declarations that owns copies of their names and shapes. The
 * initial values' data is borrowed: `initials[i].data` is an address the caller keeps valid
 * until the container has been created (NULL = zeros). decls[i].initial is pointed at
 * initials[i] by wharf_swig_state_list_fix (the arrays move while the list grows). */
struct wharf_swig_state_list {
  wharf_state_decl* decls;
  wharf_tensor_view* initials;
  size_t size;
  size_t capacity;
};

/* A fixed-capacity list of tensor views, with room for WHARF_MAX_DIMS dimensions each. */
struct wharf_swig_view_list {
  wharf_tensor_view* views;
  int64_t* shapes;
  size_t size;
  size_t capacity;
};

/* A growable list of borrowed container handles. */
struct wharf_swig_container_list {
  wharf_container** containers;
  size_t size;
  size_t capacity;
};

/* A growable list of borrowed session handles. */
struct wharf_swig_session_list {
  wharf_session** sessions;
  size_t size;
  size_t capacity;
};

/* Points every declaration with an initial value at it; NULL is a no-op. */
static void wharf_swig_state_list_fix(struct wharf_swig_state_list* list) {
  size_t i;
  if (!list) return;
  for (i = 0; i < list->size; ++i) {
    list->decls[i].initial = list->initials[i].data ? &list->initials[i] : NULL;
  }
}

/* Fills `opts` for the container helpers. Allocates nothing. */
static void wharf_swig_fill_container_options(wharf_container_options* opts, const char* name,
                                              const struct wharf_swig_decl_list* decls,
                                              wharf_weight_store* store,
                                              struct wharf_swig_state_list* states,
                                              uint64_t max_session_bytes,
                                              const wharf_container* state_arena_of,
                                              uint32_t session_capacity) {
  wharf_container_options_init_sized(opts, sizeof(*opts));
  opts->name = name;
  opts->constants = decls ? decls->decls : NULL;
  opts->num_constants = decls ? decls->size : 0;
  opts->store = store;
  wharf_swig_state_list_fix(states);
  opts->states = states ? states->decls : NULL;
  opts->num_states = states ? states->size : 0;
  opts->max_session_bytes = max_session_bytes;
  opts->state_arena_of = state_arena_of;
  opts->session_capacity = session_capacity;
}
%}

%inline %{
/** Declarations for wharf_swig_container_create, built one constant at a time. */
typedef struct wharf_swig_decl_list wharf_swig_decl_list;

/** A new empty list (free with wharf_swig_decl_list_free); NULL when out of memory. */
wharf_swig_decl_list* wharf_swig_decl_list_new(void) {
  return (wharf_swig_decl_list*)calloc(1, sizeof(wharf_swig_decl_list));
}

/** Frees the list and its copies. NULL is a no-op. */
void wharf_swig_decl_list_free(wharf_swig_decl_list* list) {
  size_t i;
  if (!list) return;
  for (i = 0; i < list->size; ++i) {
    free((void*)list->decls[i].fqn);
    free((void*)list->decls[i].shape);
  }
  free(list->decls);
  free(list);
}

/**
 * Appends a declaration, copying `fqn` and `shape`. Returns 1 on success, 0 when out of
 * memory or given a NULL list or name (the list is then unchanged). The values themselves
 * are validated by wharf_swig_container_create.
 */
int32_t wharf_swig_decl_list_add(wharf_swig_decl_list* list, const char* fqn, wharf_dtype dtype,
                                 const wharf_swig_dim* shape, int32_t ndim, wharf_placement placement,
                                 uint32_t flags) {
  char* name;
  int64_t* dims = NULL;
  size_t name_len;
  if (!list || !fqn || ndim < 0 || (ndim > 0 && !shape)) return 0;
  if (list->size == list->capacity) {
    size_t capacity = list->capacity ? list->capacity * 2 : 8;
    wharf_constant_decl* grown =
        (wharf_constant_decl*)realloc(list->decls, capacity * sizeof(wharf_constant_decl));
    if (!grown) return 0;
    list->decls = grown;
    list->capacity = capacity;
  }
  name_len = strlen(fqn) + 1;
  name = (char*)malloc(name_len);
  if (!name) return 0;
  memcpy(name, fqn, name_len);
  if (ndim > 0) {
    dims = (int64_t*)malloc((size_t)ndim * sizeof(int64_t));
    if (!dims) {
      free(name);
      return 0;
    }
    memcpy(dims, shape, (size_t)ndim * sizeof(int64_t));
  }
  list->decls[list->size].fqn = name;
  list->decls[list->size].dtype = dtype;
  list->decls[list->size].ndim = ndim;
  list->decls[list->size].shape = dims;
  list->decls[list->size].placement = placement;
  list->decls[list->size].flags = flags;
  list->decls[list->size].struct_size = (uint32_t)sizeof(wharf_constant_decl);
  list->size++;
  return 1;
}

/** State declarations for the container helpers, built one state at a time. */
typedef struct wharf_swig_state_list wharf_swig_state_list;

/** A new empty list (free with wharf_swig_state_list_free); NULL when out of memory. */
wharf_swig_state_list* wharf_swig_state_list_new(void) {
  return (wharf_swig_state_list*)calloc(1, sizeof(wharf_swig_state_list));
}

/** Frees the list and its copies (not the borrowed initial values). NULL is a no-op. */
void wharf_swig_state_list_free(wharf_swig_state_list* list) {
  size_t i;
  if (!list) return;
  for (i = 0; i < list->size; ++i) {
    free((void*)list->decls[i].fqn);
    free((void*)list->decls[i].shape);
  }
  free(list->decls);
  free(list->initials);
  free(list);
}

/**
 * Appends a state declaration, copying `fqn` and `shape`. `initial_address` (0 = zeros) is a
 * borrowed, contiguous host buffer of the state's dtype and shape that must stay valid until
 * the container has been created. Returns 1 on success, 0 when out of memory or given a NULL
 * list or name (the list is then unchanged). The values are validated by the library.
 */
int32_t wharf_swig_state_list_add(wharf_swig_state_list* list, const char* fqn, wharf_dtype dtype,
                                  const wharf_swig_dim* shape, int32_t ndim,
                                  int64_t initial_address) {
  char* name;
  int64_t* dims = NULL;
  size_t name_len;
  wharf_tensor_view* initial;
  if (!list || !fqn || ndim < 0 || (ndim > 0 && !shape)) return 0;
  if (list->size == list->capacity) {
    size_t capacity = list->capacity ? list->capacity * 2 : 8;
    wharf_state_decl* decls =
        (wharf_state_decl*)realloc(list->decls, capacity * sizeof(wharf_state_decl));
    wharf_tensor_view* initials;
    if (!decls) return 0;
    list->decls = decls;
    initials = (wharf_tensor_view*)realloc(list->initials, capacity * sizeof(wharf_tensor_view));
    if (!initials) return 0; /* decls grew, capacity did not: the list is still consistent */
    list->initials = initials;
    list->capacity = capacity;
  }
  name_len = strlen(fqn) + 1;
  name = (char*)malloc(name_len);
  if (!name) return 0;
  memcpy(name, fqn, name_len);
  if (ndim > 0) {
    dims = (int64_t*)malloc((size_t)ndim * sizeof(int64_t));
    if (!dims) {
      free(name);
      return 0;
    }
    memcpy(dims, shape, (size_t)ndim * sizeof(int64_t));
  }
  list->decls[list->size].fqn = name;
  list->decls[list->size].dtype = dtype;
  list->decls[list->size].ndim = ndim;
  list->decls[list->size].shape = dims;
  list->decls[list->size].initial = NULL; /* set by wharf_swig_state_list_fix */
  list->decls[list->size].struct_size = (uint32_t)sizeof(wharf_state_decl);
  initial = &list->initials[list->size];
  memset(initial, 0, sizeof(*initial));
  initial->struct_size = (uint32_t)sizeof(wharf_tensor_view);
  initial->data = (void*)(intptr_t)initial_address;
  initial->dtype = dtype;
  initial->device_type = WHARF_DEVICE_CPU;
  initial->device_index = 0;
  initial->ndim = ndim;
  initial->shape = dims;
  initial->strides = NULL;
  list->size++;
  return 1;
}

/** Containers for wharf_swig_session_create, added one at a time (borrowed, not owned). */
typedef struct wharf_swig_container_list wharf_swig_container_list;

/** A new empty list (free with wharf_swig_container_list_free); NULL when out of memory. */
wharf_swig_container_list* wharf_swig_container_list_new(void) {
  return (wharf_swig_container_list*)calloc(1, sizeof(wharf_swig_container_list));
}

/** Frees the list (not the containers). NULL is a no-op. */
void wharf_swig_container_list_free(wharf_swig_container_list* list) {
  if (!list) return;
  free(list->containers);
  free(list);
}

/** Appends a container. Returns 1 on success, 0 when out of memory or given a NULL list. */
int32_t wharf_swig_container_list_add(wharf_swig_container_list* list, wharf_container* container) {
  if (!list) return 0;
  if (list->size == list->capacity) {
    size_t capacity = list->capacity ? list->capacity * 2 : 4;
    wharf_container** grown =
        (wharf_container**)realloc(list->containers, capacity * sizeof(wharf_container*));
    if (!grown) return 0;
    list->containers = grown;
    list->capacity = capacity;
  }
  list->containers[list->size++] = container;
  return 1;
}

/** Sessions for wharf_swig_run_begin_batch, added one at a time (borrowed, not owned). */
typedef struct wharf_swig_session_list wharf_swig_session_list;

/** A new empty list (free with wharf_swig_session_list_free); NULL when out of memory. */
wharf_swig_session_list* wharf_swig_session_list_new(void) {
  return (wharf_swig_session_list*)calloc(1, sizeof(wharf_swig_session_list));
}

/** Frees the list (not the sessions). NULL is a no-op. */
void wharf_swig_session_list_free(wharf_swig_session_list* list) {
  if (!list) return;
  free(list->sessions);
  free(list);
}

/** Appends a session. Returns 1 on success, 0 when out of memory or given a NULL list. */
int32_t wharf_swig_session_list_add(wharf_swig_session_list* list, wharf_session* session) {
  if (!list) return 0;
  if (list->size == list->capacity) {
    size_t capacity = list->capacity ? list->capacity * 2 : 4;
    wharf_session** grown = (wharf_session**)realloc(list->sessions, capacity * sizeof(wharf_session*));
    if (!grown) return 0;
    list->sessions = grown;
    list->capacity = capacity;
  }
  list->sessions[list->size++] = session;
  return 1;
}

/** wharf_run_begin_batch over the sessions of `sessions` on the runtime's own stream. */
wharf_run* wharf_swig_run_begin_batch(wharf_container* container, const wharf_swig_session_list* sessions,
                                      wharf_status** status_out) {
  wharf_run* run = NULL;
  *status_out = wharf_run_begin_batch(container, sessions ? sessions->sessions : NULL, sessions ? sessions->size : 0,
                                      NULL, &run);
  return *status_out ? NULL : run;
}

/** wharf_model_enable_graphs with the fields of wharf_graph_options as arguments (0, NULL:
 *  the default), filled through the sized init. */
wharf_status* wharf_swig_model_enable_graphs(wharf_model* model, uint32_t max_buckets, uint64_t max_pool_bytes,
                                             uint32_t max_concurrent_runs, const char* bucket_dim,
                                             const wharf_swig_bucket* sizes, uint32_t num_sizes,
                                             uint32_t exact_shapes) {
  wharf_graph_options opts;
  wharf_graph_options_init_sized(&opts, sizeof opts);
  opts.max_buckets = max_buckets;
  opts.max_pool_bytes = max_pool_bytes;
  opts.max_concurrent_runs = max_concurrent_runs;
  opts.bucket_dim = bucket_dim;
  opts.bucket_sizes = sizes;
  opts.num_bucket_sizes = num_sizes;
  opts.exact_shapes = exact_shapes;
  return wharf_model_enable_graphs(model, &opts);
}

/** wharf_runtime_create. `opts` may be NULL (defaults). */
wharf_runtime* wharf_swig_runtime_create(const wharf_runtime_options* opts,
                                         wharf_status** status_out) {
  wharf_runtime* runtime = NULL;
  *status_out = wharf_runtime_create(opts, &runtime);
  return *status_out ? NULL : runtime;
}

/** wharf_constant_map_create. */
wharf_constant_map* wharf_swig_constant_map_create(wharf_status** status_out) {
  wharf_constant_map* map = NULL;
  *status_out = wharf_constant_map_create(&map);
  return *status_out ? NULL : map;
}

/** wharf_constant_map_load_safetensors. */
wharf_constant_map* wharf_swig_constant_map_load_safetensors(const char* path,
                                                            wharf_status** status_out) {
  wharf_constant_map* map = NULL;
  *status_out = wharf_constant_map_load_safetensors(path, &map);
  return *status_out ? NULL : map;
}

/**
 * wharf_constant_map_set with a contiguous view built from its parts; `data_address` is the
 * borrowed data pointer as an integer and must stay valid while the map is used.
 */
wharf_status* wharf_swig_constant_map_set(wharf_constant_map* map, const char* fqn,
                                          int64_t data_address, wharf_dtype dtype,
                                          wharf_device_type device_type, int32_t device_index,
                                          const wharf_swig_dim* shape, int32_t ndim) {
  wharf_tensor_view view;
  memset(&view, 0, sizeof view);
  view.struct_size = (uint32_t)sizeof view;
  view.data = (void*)(intptr_t)data_address;
  view.dtype = dtype;
  view.device_type = device_type;
  view.device_index = device_index;
  view.ndim = ndim;
  view.shape = shape;
  view.strides = NULL;
  return wharf_constant_map_set(map, fqn, &view);
}

/** The name of entry i (wharf_constant_map_get_entry); owned by the map. */
const char* wharf_swig_constant_map_entry_name(const wharf_constant_map* map, size_t i,
                                               wharf_status** status_out) {
  const char* fqn = NULL;
  wharf_tensor_view ignored;
  memset(&ignored, 0, sizeof ignored);
  ignored.struct_size = (uint32_t)sizeof ignored;
  *status_out = wharf_constant_map_get_entry(map, i, &fqn, &ignored);
  return *status_out ? NULL : fqn;
}

/** The key of metadata entry i (wharf_constant_map_get_metadata_entry); owned by the map. */
const char* wharf_swig_constant_map_metadata_key(const wharf_constant_map* map, size_t i,
                                                 wharf_status** status_out) {
  const char* key = NULL;
  const char* value = NULL;
  *status_out = wharf_constant_map_get_metadata_entry(map, i, &key, &value);
  return *status_out ? NULL : key;
}

/** The value of metadata entry i (wharf_constant_map_get_metadata_entry); owned by the map. */
const char* wharf_swig_constant_map_metadata_value(const wharf_constant_map* map, size_t i,
                                                   wharf_status** status_out) {
  const char* key = NULL;
  const char* value = NULL;
  *status_out = wharf_constant_map_get_metadata_entry(map, i, &key, &value);
  return *status_out ? NULL : value;
}

/**
 * wharf_container_create with the declarations of `decls` and the states of `states` (may be
 * NULL: none); `name` may be NULL ("model"), `store` NULL (no sharing), `max_session_bytes`
 * 0 (no budget), `state_arena_of` NULL and `session_capacity` 0 (no state arena).
 */
wharf_container* wharf_swig_container_create(wharf_runtime* runtime, const char* name,
                                             const wharf_swig_decl_list* decls,
                                             wharf_weight_store* store,
                                             wharf_swig_state_list* states,
                                             uint64_t max_session_bytes,
                                             const wharf_container* state_arena_of,
                                             uint32_t session_capacity,
                                             wharf_status** status_out) {
  wharf_container* container = NULL;
  wharf_container_options opts;
  wharf_swig_fill_container_options(&opts, name, decls, store, states, max_session_bytes, state_arena_of,
                                    session_capacity);
  *status_out = wharf_container_create(runtime, &opts, &container);
  return *status_out ? NULL : container;
}

/** wharf_container_create_from_map; the other arguments as wharf_swig_container_create. */
wharf_container* wharf_swig_container_create_from_map(wharf_runtime* runtime,
                                                      const wharf_constant_map* map,
                                                      const char* name,
                                                      wharf_weight_store* store,
                                                      wharf_swig_state_list* states,
                                                      uint64_t max_session_bytes,
                                                      wharf_status** status_out) {
  wharf_container* container = NULL;
  wharf_container_options opts;
  wharf_swig_fill_container_options(&opts, name, NULL, store, states, max_session_bytes, NULL, 0);
  *status_out = wharf_container_create_from_map(runtime, map, &opts, &container);
  return *status_out ? NULL : container;
}

/**
 * wharf_run_begin; `session` may be NULL (containers without states); `stream` is a
 * cudaStream_t as an integer (0 = the runtime's own stream, the only value the host backend
 * accepts).
 */
wharf_run* wharf_swig_run_begin(wharf_container* container, wharf_session* session,
                                int64_t stream, wharf_status** status_out) {
  wharf_run* run = NULL;
  *status_out = wharf_run_begin(container, session, (void*)(intptr_t)stream, &run);
  return *status_out ? NULL : run;
}

/** wharf_weight_store_create. */
wharf_weight_store* wharf_swig_weight_store_create(wharf_runtime* runtime,
                                                   wharf_status** status_out) {
  wharf_weight_store* store = NULL;
  *status_out = wharf_weight_store_create(runtime, &store);
  return *status_out ? NULL : store;
}

/** wharf_session_create over the containers of `containers`; `opts` may be NULL (defaults). */
wharf_session* wharf_swig_session_create(wharf_runtime* runtime,
                                         const wharf_swig_container_list* containers,
                                         const wharf_session_options* opts,
                                         wharf_status** status_out) {
  wharf_session* session = NULL;
  *status_out = wharf_session_create(runtime, containers ? containers->containers : NULL,
                                     containers ? containers->size : 0, opts, &session);
  return *status_out ? NULL : session;
}

/** wharf_session_fork. */
wharf_session* wharf_swig_session_fork(const wharf_session* src, wharf_status** status_out) {
  wharf_session* session = NULL;
  *status_out = wharf_session_fork(src, &session);
  return *status_out ? NULL : session;
}

/** wharf_model_package_get_method: a new reference to method `name`'s model. */
wharf_model* wharf_swig_model_package_get_method(wharf_model_package* package, const char* name,
                                                 wharf_status** status_out) {
  wharf_model* model = NULL;
  *status_out = wharf_model_package_get_method(package, name, &model);
  return *status_out ? NULL : model;
}

/** wharf_model_package_create_session; `opts` may be NULL (defaults). */
wharf_session* wharf_swig_model_package_create_session(wharf_model_package* package,
                                                       const wharf_session_options* opts,
                                                       wharf_status** status_out) {
  wharf_session* session = NULL;
  *status_out = wharf_model_package_create_session(package, opts, &session);
  return *status_out ? NULL : session;
}

/* One input (`input` != 0) or output of a package's method, read field by field: the
 * struct's arrays are the package's and cannot cross as they are. Each helper fills the
 * struct anew (the package is immutable), so every call stands alone. */
static wharf_status* wharf_swig_package_tensor(const wharf_model_package* package, int32_t input, size_t method,
                                               size_t i, wharf_model_package_tensor_info* info) {
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  return input ? wharf_model_package_get_method_input(package, method, i, info)
               : wharf_model_package_get_method_output(package, method, i, info);
}

/** The tensor's name. */
const char* wharf_swig_model_package_tensor_name(const wharf_model_package* package, int32_t input, size_t method,
                                                 size_t i, wharf_status** status_out) {
  wharf_model_package_tensor_info info;
  *status_out = wharf_swig_package_tensor(package, input, method, i, &info);
  return *status_out ? NULL : info.name;
}

/** The tensor's dtype (a wharf_dtype). */
int32_t wharf_swig_model_package_tensor_dtype(const wharf_model_package* package, int32_t input, size_t method,
                                              size_t i, wharf_status** status_out) {
  wharf_model_package_tensor_info info;
  *status_out = wharf_swig_package_tensor(package, input, method, i, &info);
  return *status_out ? 0 : (int32_t)info.dtype;
}

/** The tensor's number of dimensions. */
int32_t wharf_swig_model_package_tensor_ndim(const wharf_model_package* package, int32_t input, size_t method,
                                             size_t i, wharf_status** status_out) {
  wharf_model_package_tensor_info info;
  *status_out = wharf_swig_package_tensor(package, input, method, i, &info);
  return *status_out ? 0 : info.ndim;
}

/* Dimension `d` of the tensor: `what` 0 = size (-1 where symbolic), 1 = min, 2 = max. */
static int64_t wharf_swig_package_dim(const wharf_model_package* package, int32_t input, size_t method, size_t i,
                                      int32_t d, int what, wharf_status** status_out) {
  wharf_model_package_tensor_info info;
  *status_out = wharf_swig_package_tensor(package, input, method, i, &info);
  if (*status_out) return 0;
  if (d < 0 || d >= info.ndim) {
    *status_out = wharf_status_create(WHARF_INVALID_ARGUMENT, "wharf_swig_model_package_dim: dimension out of range");
    return 0;
  }
  return what == 0 ? info.shape[d] : what == 1 ? info.dim_min[d] : info.dim_max[d];
}

/** Dimension `d`'s size, -1 where symbolic. */
int64_t wharf_swig_model_package_dim_size(const wharf_model_package* package, int32_t input, size_t method,
                                          size_t i, int32_t d, wharf_status** status_out) {
  return wharf_swig_package_dim(package, input, method, i, d, 0, status_out);
}

/** Dimension `d`'s smallest size. */
int64_t wharf_swig_model_package_dim_min(const wharf_model_package* package, int32_t input, size_t method,
                                         size_t i, int32_t d, wharf_status** status_out) {
  return wharf_swig_package_dim(package, input, method, i, d, 1, status_out);
}

/** Dimension `d`'s largest size, -1 when unbounded. */
int64_t wharf_swig_model_package_dim_max(const wharf_model_package* package, int32_t input, size_t method,
                                         size_t i, int32_t d, wharf_status** status_out) {
  return wharf_swig_package_dim(package, input, method, i, d, 2, status_out);
}

/** Dimension `d`'s name (a symbolic dimension), or NULL where fixed. */
const char* wharf_swig_model_package_dim_name(const wharf_model_package* package, int32_t input, size_t method,
                                              size_t i, int32_t d, wharf_status** status_out) {
  wharf_model_package_tensor_info info;
  *status_out = wharf_swig_package_tensor(package, input, method, i, &info);
  if (*status_out) return NULL;
  if (d < 0 || d >= info.ndim) {
    *status_out = wharf_status_create(WHARF_INVALID_ARGUMENT, "wharf_swig_model_package_dim_name: dimension out of range");
    return NULL;
  }
  return info.dim_names[d];
}

/**
 * wharf_run_read into host memory given as an integer address; `dst_address` must point to
 * at least `bytes` writable bytes.
 */
wharf_status* wharf_swig_run_read(const wharf_run* run, const char* fqn, uint64_t offset,
                                  int64_t dst_address, uint64_t bytes) {
  return wharf_run_read(run, fqn, offset, (void*)(intptr_t)dst_address, bytes);
}

/**
 * wharf_model_load with the fields of wharf_model_options as arguments (each may be NULL/0
 * for its default), filled through the sized init.
 */
wharf_model* wharf_swig_model_load(wharf_runtime* runtime, const char* so_path, const wharf_constant_map* weights,
                                   const char* name, wharf_weight_store* store, uint64_t max_session_bytes,
                                   const char* shim_path, wharf_status** status_out) {
  wharf_model* model = NULL;
  wharf_model_options opts;
  wharf_model_options_init_sized(&opts, sizeof opts);
  opts.name = name;
  opts.store = store;
  opts.max_session_bytes = max_session_bytes;
  opts.shim_path = shim_path;
  *status_out = wharf_model_load(runtime, so_path, weights, &opts, &model);
  return *status_out ? NULL : model;
}

/**
 * Offloader options (wharf_offloader_options filled through the sized init) owning copies
 * of their strings; free with wharf_swig_offloader_options_free. `layer_pattern` may be
 * NULL (the default). NULL when out of memory.
 */
wharf_offloader_options* wharf_swig_offloader_options_new(const char* layer_pattern, uint32_t group_size,
                                                          uint32_t num_in_group, uint32_t prefetch_step,
                                                          uint32_t slot_capacity, uint64_t step_compute_us,
                                                          uint64_t h2d_bytes_per_second, int32_t refuse_if_exposed) {
  wharf_offloader_options* o = (wharf_offloader_options*)calloc(1, sizeof *o);
  if (!o) return NULL;
  wharf_offloader_options_init_sized(o, sizeof *o);
  if (layer_pattern) {
    char* copy = (char*)malloc(strlen(layer_pattern) + 1);
    if (!copy) {
      free(o);
      return NULL;
    }
    strcpy(copy, layer_pattern);
    o->layer_pattern = copy;
  }
  o->group_size = group_size;
  o->num_in_group = num_in_group;
  o->prefetch_step = prefetch_step;
  o->slot_capacity = slot_capacity;
  o->step_compute_us = step_compute_us;
  o->h2d_bytes_per_second = h2d_bytes_per_second;
  o->refuse_if_exposed = refuse_if_exposed;
  return o;
}

/** Appends `fqn` (copied) to the explicit list of offloaded constants; 0 when out of memory. */
int32_t wharf_swig_offloader_options_add_fqn(wharf_offloader_options* o, const char* fqn) {
  const char** grown;
  char* copy;
  if (!o || !fqn) return 0;
  copy = (char*)malloc(strlen(fqn) + 1);
  if (!copy) return 0;
  strcpy(copy, fqn);
  grown = (const char**)realloc((void*)o->fqns, (o->num_fqns + 1) * sizeof(char*));
  if (!grown) {
    free(copy);
    return 0;
  }
  grown[o->num_fqns++] = copy;
  o->fqns = grown;
  return 1;
}

/** Frees options made by wharf_swig_offloader_options_new; NULL is a no-op. */
void wharf_swig_offloader_options_free(wharf_offloader_options* o) {
  size_t i;
  if (!o) return;
  for (i = 0; i < o->num_fqns; ++i) free((void*)o->fqns[i]);
  free((void*)o->fqns);
  free((void*)o->layer_pattern);
  free(o);
}

/** wharf_offloader_create; `opts` may be NULL (defaults). */
wharf_offloader* wharf_swig_offloader_create(wharf_container* container, const wharf_offloader_options* opts,
                                             wharf_status** status_out) {
  wharf_offloader* off = NULL;
  *status_out = wharf_offloader_create(container, opts, &off);
  return *status_out ? NULL : off;
}

/** wharf_model_get_offloader: NULL (and no status) for a model loaded without offload. */
wharf_offloader* wharf_swig_model_get_offloader(wharf_model* model, wharf_status** status_out) {
  wharf_offloader* off = NULL;
  *status_out = wharf_model_get_offloader(model, &off);
  return *status_out ? NULL : off;
}

/**
 * wharf_run_wait_offload for `layer`, copying the view of its offloaded constant `i` into
 * `out` (waiting again for the same layer before it is issued returns the same views).
 */
wharf_status* wharf_swig_run_wait_offload_view(wharf_run* run, wharf_offloader* offloader, uint32_t layer,
                                               size_t i, wharf_tensor_view* out) {
  size_t n = wharf_offloader_num_layer_constants(offloader, layer);
  wharf_tensor_view* views;
  wharf_status* st;
  if (i >= n) return wharf_status_create(WHARF_INVALID_ARGUMENT, "offloaded constant index out of range");
  views = (wharf_tensor_view*)calloc(n, sizeof *views);
  if (!views) return wharf_status_create(WHARF_OUT_OF_MEMORY, "host memory exhausted allocating offload views");
  for (size_t k = 0; k < n; ++k) views[k].struct_size = (uint32_t)sizeof *views;
  st = wharf_run_wait_offload(run, offloader, layer, views, n);
  if (!st && out) {
    uint32_t size = out->struct_size;
    *out = views[i];
    out->struct_size = size;
  }
  free(views);
  return st;
}

/** wharf_run_wait_offload without views (a layer that is not offloaded, or a wait only). */
wharf_status* wharf_swig_run_wait_offload(wharf_run* run, wharf_offloader* offloader, uint32_t layer) {
  return wharf_run_wait_offload(run, offloader, layer, NULL, 0);
}

/** wharf_replica_group_create over the containers of `containers`. */
wharf_replica_group* wharf_swig_replica_group_create(const wharf_swig_container_list* containers,
                                                     wharf_status** status_out) {
  wharf_replica_group* group = NULL;
  *status_out = wharf_replica_group_create(containers ? containers->containers : NULL,
                                           containers ? containers->size : 0, &group);
  return *status_out ? NULL : group;
}

/** wharf_replica_group_get_unique_id into `id_out` (id_len must be the id's 256 bytes). */
wharf_status* wharf_swig_replica_group_get_unique_id(wharf_runtime* runtime, unsigned char* id_out, int32_t id_len) {
  wharf_replica_group_id id;
  wharf_status* st;
  if (id_len != (int32_t)sizeof id.internal)
    return wharf_status_create(WHARF_INVALID_ARGUMENT, "replica group id: the output array must be 256 bytes");
  st = wharf_replica_group_get_unique_id(runtime, &id);
  if (!st) memcpy(id_out, id.internal, sizeof id.internal);
  return st;
}

/** wharf_replica_group_create_rank from the id's bytes (256 of them) and a timeout in ms (0:
 * the default); Java's signed ints are checked here, before the library sees them. */
wharf_replica_group* wharf_swig_replica_group_create_rank(wharf_container* container, const unsigned char* id_in,
                                                          int32_t id_len, int32_t rank, int32_t size,
                                                          int64_t timeout_ms, wharf_status** status_out) {
  wharf_replica_group_id id;
  wharf_replica_group_rank_options o;
  wharf_replica_group* group = NULL;
  char message[128];
  if (id_len != (int32_t)sizeof id.internal) {
    snprintf(message, sizeof message, "replica group id: an id is %u bytes, got %d", (unsigned)sizeof id.internal,
             (int)id_len);
    *status_out = wharf_status_create(WHARF_INVALID_ARGUMENT, message);
    return NULL;
  }
  if (rank < 0 || size < 0) {
    snprintf(message, sizeof message, "replica group: rank %d, size %d: negative", (int)rank, (int)size);
    *status_out = wharf_status_create(WHARF_INVALID_ARGUMENT, message);
    return NULL;
  }
  if (timeout_ms < 0 || timeout_ms > (int64_t)UINT32_MAX) {
    snprintf(message, sizeof message, "replica group: timeout %lld ms is out of range (0 to %u)",
             (long long)timeout_ms, (unsigned)UINT32_MAX);
    *status_out = wharf_status_create(WHARF_INVALID_ARGUMENT, message);
    return NULL;
  }
  memcpy(id.internal, id_in, sizeof id.internal);
  wharf_replica_group_rank_options_init(&o);
  o.timeout_ms = (uint32_t)timeout_ms;
  *status_out = wharf_replica_group_create_rank(container, &id, (uint32_t)rank, (uint32_t)size, &o, &group);
  return *status_out ? NULL : group;
}

/** Tensor views for wharf_swig_model_run, built one at a time; owns copies of the shapes. */
typedef struct wharf_swig_view_list wharf_swig_view_list;

/** A new list of `capacity` zeroed views (at most 4096; free with wharf_swig_view_list_free); NULL when out of memory. */
wharf_swig_view_list* wharf_swig_view_list_new(int32_t capacity) {
  wharf_swig_view_list* list;
  if (capacity < 0 || capacity > 4096) return NULL;
  list = (wharf_swig_view_list*)calloc(1, sizeof(wharf_swig_view_list));
  if (!list) return NULL;
  list->views = (wharf_tensor_view*)calloc(capacity ? (size_t)capacity : 1, sizeof(wharf_tensor_view));
  list->shapes = (int64_t*)calloc(capacity ? (size_t)capacity * WHARF_MAX_DIMS : 1, sizeof(int64_t));
  if (!list->views || !list->shapes) {
    free(list->views);
    free(list->shapes);
    free(list);
    return NULL;
  }
  list->capacity = (size_t)capacity;
  return list;
}

/** Frees the list. NULL is a no-op. */
void wharf_swig_view_list_free(wharf_swig_view_list* list) {
  if (!list) return;
  free(list->views);
  free(list->shapes);
  free(list);
}

/**
 * Appends a contiguous view of `data_address` (borrowed: it must stay valid for the call that
 * reads the list). Returns 1, or 0 when the list is full or NULL.
 */
int32_t wharf_swig_view_list_add(wharf_swig_view_list* list, int64_t data_address, wharf_dtype dtype,
                                 wharf_device_type device_type, int32_t device_index,
                                 const wharf_swig_dim* shape, int32_t ndim) {
  wharf_tensor_view* v;
  int64_t* dims;
  if (!list || list->size == list->capacity || ndim < 0 || ndim > WHARF_MAX_DIMS) return 0;
  v = &list->views[list->size];
  dims = &list->shapes[list->size * WHARF_MAX_DIMS];
  if (ndim > 0) memcpy(dims, shape, (size_t)ndim * sizeof(int64_t));
  memset(v, 0, sizeof *v);
  v->struct_size = (uint32_t)sizeof *v;
  v->data = (void*)(intptr_t)data_address;
  v->dtype = dtype;
  v->device_type = device_type;
  v->device_index = device_index;
  v->ndim = ndim;
  v->shape = ndim > 0 ? dims : NULL;
  v->strides = NULL;
  list->size++;
  return 1;
}

/** View i of the list (borrowed from it), or NULL past its capacity. */
wharf_tensor_view* wharf_swig_view_list_at(wharf_swig_view_list* list, int32_t i) {
  if (!list || i < 0 || (size_t)i >= list->capacity) return NULL;
  return &list->views[i];
}

/**
 * wharf_model_run with the views of `inputs` (every view added) and `outputs` (all its
 * capacity, which must be the model's output count; filled by the library, their shapes
 * pointing into the run: read them before the run ends).
 */
void wharf_swig_model_run(wharf_model* model, wharf_run* run, const wharf_swig_view_list* inputs,
                          wharf_swig_view_list* outputs, wharf_status** status_out) {
  size_t i;
  if (!inputs || !outputs) {
    *status_out = wharf_status_create(WHARF_INVALID_ARGUMENT, "wharf_swig_model_run: NULL view list");
    return;
  }
  for (i = 0; i < outputs->capacity; ++i) {
    memset(&outputs->views[i], 0, sizeof outputs->views[i]);
    outputs->views[i].struct_size = (uint32_t)sizeof outputs->views[i];
  }
  outputs->size = 0;
  *status_out = wharf_model_run(model, run, inputs->views, inputs->size, outputs->views, outputs->capacity);
  if (!*status_out) outputs->size = outputs->capacity;
}

/**
 * wharf_run_copy with addresses as integers: `bytes` bytes from `src_address` (memory the run
 * owns or pins: an output of wharf_model_run, a constant, a state) to `dst_address` (host
 * memory of at least `bytes` bytes), ordered on the run's stream; returns when done.
 */
wharf_status* wharf_swig_run_copy(const wharf_run* run, int64_t dst_address, int64_t src_address, uint64_t bytes) {
  return wharf_run_copy(run, (void*)(intptr_t)dst_address, (const void*)(intptr_t)src_address, bytes);
}

/** Sets wharf_update_options.wait_stream from a cudaStream_t given as an integer (0 = none). */
void wharf_swig_update_options_set_wait_stream(wharf_update_options* opts, int64_t stream) {
  if (opts) opts->wait_stream = (void*)(intptr_t)stream;
}

/** wharf_run_stream as an integer (0 on the host backend). */
int64_t wharf_swig_run_stream(const wharf_run* run) {
  return (int64_t)(intptr_t)wharf_run_stream(run);
}
%}

#if defined(SWIGJAVA)
%inline %{
/* The functions that free a handle, wrapped under their own names (the %renames above) so
 * that their Java parameter is taken out of its proxy (see "Freeing a handle once"). */
void wharf_swig_runtime_free(wharf_runtime* freed) { wharf_runtime_free(freed); }
void wharf_swig_constant_map_free(wharf_constant_map* freed) { wharf_constant_map_free(freed); }
void wharf_swig_container_free(wharf_container* freed) { wharf_container_free(freed); }
wharf_status* wharf_swig_run_end(wharf_run* freed) { return wharf_run_end(freed); }
void wharf_swig_weight_store_free(wharf_weight_store* freed) { wharf_weight_store_free(freed); }
void wharf_swig_session_free(wharf_session* freed) { wharf_session_free(freed); }
void wharf_swig_model_free(wharf_model* freed) { wharf_model_free(freed); }
void wharf_swig_model_package_free(wharf_model_package* freed) { wharf_model_package_free(freed); }
void wharf_swig_offloader_free(wharf_offloader* freed) { wharf_offloader_free(freed); }
void wharf_swig_replica_group_free(wharf_replica_group* freed) { wharf_replica_group_free(freed); }

/**
 * A java.nio.ByteBuffer over `size` bytes at `address` (JNI NewDirectByteBuffer). The buffer
 * does not own the memory: it is valid only as long as whatever owns the memory.
 */
jobject wharf_swig_byte_view(JNIEnv* jenv, int64_t address, int64_t size) {
  if (address == 0 || size < 0) {
    SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException, "byte view of a NULL address or a negative size");
    return NULL;
  }
  return (*jenv)->NewDirectByteBuffer(jenv, (void*)(intptr_t)address, (jlong)size);
}

/** The address of a direct buffer's memory (its element 0, ignoring position); 0 if `buffer` is not direct. */
int64_t wharf_swig_direct_buffer_address(JNIEnv* jenv, jobject buffer) {
  if (!buffer) return 0;
  return (int64_t)(intptr_t)(*jenv)->GetDirectBufferAddress(jenv, buffer);
}

/** The run a fold callback receives, from the address the trampoline hands to Java. */
wharf_run* wharf_swig_run_at(int64_t address) { return (wharf_run*)(intptr_t)address; }
%}

%{
/* A fold callback's bridge object (dev.wharf.FoldCall, a global reference for the update)
 * and how to call it: `int invoke(long runAddress)` runs the Java callback and returns 0 or
 * the wharf_code of its failure, `byte[] message()` the failure's UTF-8 message. */
typedef struct wharf_swig_fold {
  JavaVM* vm;
  jobject call;
  jmethodID invoke;
  jmethodID message;
} wharf_swig_fold;

/* A status for the library, made with wharf_status_create from the bridge's code and message. */
static wharf_status* wharf_swig_fold_status(JNIEnv* env, wharf_swig_fold* f, jint code) {
  jbyteArray bytes;
  char* text;
  jsize len;
  wharf_status* st;
  bytes = (jbyteArray)(*env)->CallObjectMethod(env, f->call, f->message);
  if ((*env)->ExceptionCheck(env) || !bytes) {
    (*env)->ExceptionClear(env);
    return wharf_status_create((wharf_code)code, "the Java fold callback failed");
  }
  len = (*env)->GetArrayLength(env, bytes);
  text = (char*)malloc((size_t)len + 1);
  if (!text) {
    (*env)->DeleteLocalRef(env, bytes);
    return wharf_status_create(WHARF_OUT_OF_MEMORY, "host memory exhausted reporting a Java fold failure");
  }
  (*env)->GetByteArrayRegion(env, bytes, 0, len, (jbyte*)text);
  text[len] = '\0';
  (*env)->DeleteLocalRef(env, bytes);
  st = wharf_status_create((wharf_code)code, text); /* copies the message */
  free(text);
  return st;
}

/* The wharf_fold_fn: calls the bridge on this thread (attached for the call if the library
 * runs the fold on a thread the JVM does not know). */
static wharf_status* wharf_swig_fold_trampoline(wharf_run* run, void* user) {
  wharf_swig_fold* f = (wharf_swig_fold*)user;
  JNIEnv* env = NULL;
  int attached = 0;
  jint code;
  wharf_status* st = NULL;
  if ((*f->vm)->GetEnv(f->vm, (void**)&env, JNI_VERSION_1_6) != JNI_OK) {
    if ((*f->vm)->AttachCurrentThread(f->vm, (void**)&env, NULL) != JNI_OK)
      return wharf_status_create(WHARF_INTERNAL, "the Java fold callback's thread could not attach to the JVM");
    attached = 1;
  }
  code = (*env)->CallIntMethod(env, f->call, f->invoke, (jlong)(intptr_t)run);
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionClear(env);
    st = wharf_status_create(WHARF_INTERNAL, "the Java fold callback's bridge threw");
  } else if (code != 0) {
    st = wharf_swig_fold_status(env, f, code);
  }
  if (attached) (*f->vm)->DetachCurrentThread(f->vm);
  return st;
}

/* The log receiver: dev.wharf.WharfLog's `static void log(int level, byte[] utf8)`, found
 * once by wharf_swig_log_to_java (before the trampoline is installed) and kept for the life of
 * the process: nothing here is ever freed, so a line in flight on a library thread while the
 * callback is replaced still finds it. */
static JavaVM* wharf_swig_log_vm;
static jclass wharf_swig_log_class;
static jmethodID wharf_swig_log_method;

/* The wharf_log_fn: hands the line to WharfLog.log on this thread (attached for the call
 * when it is a library thread the JVM does not know). A line logged while this thread has a
 * Java exception pending is dropped (no Java code may run then). */
static void wharf_swig_log_trampoline(wharf_log_level level, const char* message, void* user) {
  JNIEnv* env = NULL;
  int attached = 0;
  jbyteArray bytes;
  (void)user;
  if ((*wharf_swig_log_vm)->GetEnv(wharf_swig_log_vm, (void**)&env, JNI_VERSION_1_6) != JNI_OK) {
    if ((*wharf_swig_log_vm)->AttachCurrentThreadAsDaemon(wharf_swig_log_vm, (void**)&env, NULL) != JNI_OK) return;
    attached = 1;
  }
  if (!(*env)->ExceptionCheck(env)) {
    bytes = wharf_swig_utf8_bytes(env, message);
    if (bytes) {
      (*env)->CallStaticVoidMethod(env, wharf_swig_log_class, wharf_swig_log_method, (jint)level, bytes);
      (*env)->DeleteLocalRef(env, bytes);
    }
    if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env); /* WharfLog.log catches everything; OOM */
  }
  if (attached) (*wharf_swig_log_vm)->DetachCurrentThread(wharf_swig_log_vm);
}

/* Prepares `f` for `fold_call` and installs the trampoline in `o` (a copy of the caller's
 * options). 0 with a Java exception pending on failure. */
static int wharf_swig_fold_begin(JNIEnv* jenv, jobject fold_call, wharf_swig_fold* f, wharf_update_options* o) {
  jclass cls;
  memset(f, 0, sizeof *f);
  if (!fold_call) {
    SWIG_JavaThrowException(jenv, SWIG_JavaNullPointerException, "fold is null");
    return 0;
  }
  if ((*jenv)->GetJavaVM(jenv, &f->vm) != JNI_OK) {
    SWIG_JavaThrowException(jenv, SWIG_JavaRuntimeException, "GetJavaVM failed");
    return 0;
  }
  cls = (*jenv)->GetObjectClass(jenv, fold_call);
  f->invoke = (*jenv)->GetMethodID(jenv, cls, "invoke", "(J)I");
  f->message = f->invoke ? (*jenv)->GetMethodID(jenv, cls, "message", "()[B") : NULL;
  (*jenv)->DeleteLocalRef(jenv, cls);
  if (!f->invoke || !f->message) return 0; /* NoSuchMethodError pending */
  f->call = (*jenv)->NewGlobalRef(jenv, fold_call);
  if (!f->call) return 0;
  o->fold = wharf_swig_fold_trampoline;
  o->fold_user = f;
  return 1;
}
%}

%{
/* A progress callback's bridge object (dev.wharf.ProgressCall, a global reference for the
 * call) and its `boolean invoke(long done, long total)`: true goes on, false cancels. The
 * library calls it on the calling thread, a Java thread; it is attached for the call
 * otherwise, as the fold trampoline does. */
typedef struct wharf_swig_progress {
  JavaVM* vm;
  jobject call;
  jmethodID invoke;
} wharf_swig_progress;

static int32_t wharf_swig_progress_trampoline(uint64_t done, uint64_t total, void* user) {
  wharf_swig_progress* p = (wharf_swig_progress*)user;
  JNIEnv* env = NULL;
  int attached = 0;
  jboolean go_on;
  if ((*p->vm)->GetEnv(p->vm, (void**)&env, JNI_VERSION_1_6) != JNI_OK) {
    if ((*p->vm)->AttachCurrentThread(p->vm, (void**)&env, NULL) != JNI_OK) return 1;
    attached = 1;
  }
  if ((*env)->ExceptionCheck(env)) {
    go_on = JNI_FALSE; /* no Java code may run now: cancel */
  } else {
    go_on = (*env)->CallBooleanMethod(env, p->call, p->invoke, (jlong)done, (jlong)total);
    if ((*env)->ExceptionCheck(env)) { /* ProgressCall.invoke catches everything; OOM */
      (*env)->ExceptionClear(env);
      go_on = JNI_FALSE;
    }
  }
  if (attached) (*p->vm)->DetachCurrentThread(p->vm);
  return go_on ? 0 : 1;
}

/* A bridge for `progress_call` (NULL: none, returns NULL with no exception). NULL with a
 * Java exception pending on failure. */
static wharf_swig_progress* wharf_swig_progress_new(JNIEnv* jenv, jobject progress_call, int* failed) {
  wharf_swig_progress* p;
  jclass cls;
  *failed = 0;
  if (!progress_call) return NULL;
  *failed = 1;
  p = (wharf_swig_progress*)calloc(1, sizeof *p);
  if (!p) {
    SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "allocating a progress bridge");
    return NULL;
  }
  if ((*jenv)->GetJavaVM(jenv, &p->vm) != JNI_OK) {
    free(p);
    SWIG_JavaThrowException(jenv, SWIG_JavaRuntimeException, "GetJavaVM failed");
    return NULL;
  }
  cls = (*jenv)->GetObjectClass(jenv, progress_call);
  p->invoke = (*jenv)->GetMethodID(jenv, cls, "invoke", "(JJ)Z");
  (*jenv)->DeleteLocalRef(jenv, cls);
  if (!p->invoke) { /* NoSuchMethodError pending */
    free(p);
    return NULL;
  }
  p->call = (*jenv)->NewGlobalRef(jenv, progress_call);
  if (!p->call) {
    free(p);
    SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "a global reference for the progress bridge");
    return NULL;
  }
  *failed = 0;
  return p;
}

static void wharf_swig_progress_free(JNIEnv* jenv, wharf_swig_progress* p) {
  if (!p) return;
  (*jenv)->DeleteGlobalRef(jenv, p->call);
  free(p);
}
%}

%inline %{
/**
 * Installs a dev.wharf.ProgressCall as the options' progress callback (NULL: none); the
 * bridge lives until wharf_swig_update_options_clear_progress, which the caller must call
 * before deleting the options. Returns 0 with a Java exception pending on failure.
 */
int32_t wharf_swig_update_options_set_progress(JNIEnv* jenv, wharf_update_options* opts, jobject progress_call) {
  int failed;
  wharf_swig_progress* p;
  if (!opts) return 0;
  p = wharf_swig_progress_new(jenv, progress_call, &failed);
  if (failed) return 0;
  opts->progress = p ? wharf_swig_progress_trampoline : NULL;
  opts->progress_user = p;
  return 1;
}

/**
 * wharf_swig_container_create_from_map with a dev.wharf.ProgressCall (NULL: none) as the
 * options' progress callback for the call.
 */
wharf_container* wharf_swig_container_create_from_map_progress(JNIEnv* jenv, wharf_runtime* runtime,
                                                               const wharf_constant_map* map, const char* name,
                                                               wharf_weight_store* store,
                                                               wharf_swig_state_list* states,
                                                               uint64_t max_session_bytes,
                                                               const wharf_container* state_arena_of,
                                                               uint32_t session_capacity, jobject progress_call,
                                                               wharf_status** status_out) {
  wharf_container* container = NULL;
  wharf_container_options opts;
  int failed;
  wharf_swig_progress* p = wharf_swig_progress_new(jenv, progress_call, &failed);
  if (failed) return NULL;
  wharf_swig_fill_container_options(&opts, name, NULL, store, states, max_session_bytes, state_arena_of,
                                    session_capacity);
  if (p) {
    opts.progress = wharf_swig_progress_trampoline;
    opts.progress_user = p;
  }
  *status_out = wharf_container_create_from_map(runtime, map, &opts, &container);
  wharf_swig_progress_free(jenv, p);
  return *status_out ? NULL : container;
}

/** wharf_swig_model_load with a dev.wharf.ProgressCall (NULL: none) for the call. */
wharf_model* wharf_swig_model_load_progress(JNIEnv* jenv, wharf_runtime* runtime, const char* so_path,
                                            const wharf_constant_map* weights, const char* name,
                                            wharf_weight_store* store, uint64_t max_session_bytes,
                                            const char* shim_path, const wharf_offloader_options* offload,
                                            uint32_t session_capacity, jobject progress_call,
                                            wharf_status** status_out) {
  wharf_model* model = NULL;
  wharf_model_options opts;
  int failed;
  wharf_swig_progress* p = wharf_swig_progress_new(jenv, progress_call, &failed);
  if (failed) return NULL;
  wharf_model_options_init_sized(&opts, sizeof opts);
  opts.name = name;
  opts.store = store;
  opts.max_session_bytes = max_session_bytes;
  opts.shim_path = shim_path;
  opts.offload = offload;
  opts.session_capacity = session_capacity;
  if (p) {
    opts.progress = wharf_swig_progress_trampoline;
    opts.progress_user = p;
  }
  *status_out = wharf_model_load(runtime, so_path, weights, &opts, &model);
  wharf_swig_progress_free(jenv, p);
  return *status_out ? NULL : model;
}

/**
 * wharf_model_package_load with the fields of wharf_model_package_options as arguments
 * (`shim_path` may be NULL) and a dev.wharf.ProgressCall (NULL: none) for the call.
 */
wharf_model_package* wharf_swig_model_package_load_progress(JNIEnv* jenv, wharf_runtime* runtime, const char* dir,
                                                            const char* shim_path, uint64_t max_session_bytes,
                                                            uint32_t session_capacity, jobject progress_call,
                                                            wharf_status** status_out) {
  wharf_model_package* package = NULL;
  wharf_model_package_options opts;
  int failed;
  wharf_swig_progress* p = wharf_swig_progress_new(jenv, progress_call, &failed);
  if (failed) return NULL;
  wharf_model_package_options_init_sized(&opts, sizeof opts);
  opts.shim_path = shim_path;
  opts.max_session_bytes = max_session_bytes;
  opts.session_capacity = session_capacity;
  if (p) {
    opts.progress = wharf_swig_progress_trampoline;
    opts.progress_user = p;
  }
  *status_out = wharf_model_package_load(runtime, dir, &opts, &package);
  wharf_swig_progress_free(jenv, p);
  return *status_out ? NULL : package;
}

/** Removes and frees what wharf_swig_update_options_set_progress installed. */
void wharf_swig_update_options_clear_progress(JNIEnv* jenv, wharf_update_options* opts) {
  if (!opts) return;
  if (opts->progress == wharf_swig_progress_trampoline)
    wharf_swig_progress_free(jenv, (wharf_swig_progress*)opts->progress_user);
  opts->progress = NULL;
  opts->progress_user = NULL;
}
%}

%inline %{
/**
 * wharf_container_update with a Java fold callback: `fold_call` is a dev.wharf.FoldCall
 * (see wharf_swig_fold above); `opts` is copied, its fold fields replaced.
 */
void wharf_swig_container_update_fold(JNIEnv* jenv, wharf_container* container, const wharf_constant_map* map,
                                      const wharf_update_options* opts, jobject fold_call,
                                      wharf_status** status_out) {
  wharf_update_options o;
  wharf_swig_fold f;
  if (!opts) return;
  o = *opts;
  if (!wharf_swig_fold_begin(jenv, fold_call, &f, &o)) return;
  *status_out = wharf_container_update(container, map, &o);
  (*jenv)->DeleteGlobalRef(jenv, f.call);
}

/** wharf_container_update_from_file with a Java fold callback, as wharf_swig_container_update_fold. */
void wharf_swig_container_update_from_file_fold(JNIEnv* jenv, wharf_container* container, const char* path,
                                                const wharf_update_options* opts, jobject fold_call,
                                                wharf_status** status_out) {
  wharf_update_options o;
  wharf_swig_fold f;
  if (!opts) return;
  o = *opts;
  if (!wharf_swig_fold_begin(jenv, fold_call, &f, &o)) return;
  *status_out = wharf_container_update_from_file(container, path, &o);
  (*jenv)->DeleteGlobalRef(jenv, f.call);
}

/** wharf_weight_store_update_from_file with a Java fold callback, as wharf_swig_container_update_fold. */
void wharf_swig_weight_store_update_from_file_fold(JNIEnv* jenv, wharf_weight_store* store, const char* path,
                                                   const wharf_update_options* opts, jobject fold_call,
                                                   wharf_status** status_out) {
  wharf_update_options o;
  wharf_swig_fold f;
  if (!opts) return;
  o = *opts;
  if (!wharf_swig_fold_begin(jenv, fold_call, &f, &o)) return;
  *status_out = wharf_weight_store_update_from_file(store, path, &o);
  (*jenv)->DeleteGlobalRef(jenv, f.call);
}

/** wharf_weight_store_update with a Java fold callback, as wharf_swig_container_update_fold. */
void wharf_swig_weight_store_update_fold(JNIEnv* jenv, wharf_weight_store* store, const wharf_constant_map* map,
                                         const wharf_update_options* opts, jobject fold_call,
                                         wharf_status** status_out) {
  wharf_update_options o;
  wharf_swig_fold f;
  if (!opts) return;
  o = *opts;
  if (!wharf_swig_fold_begin(jenv, fold_call, &f, &o)) return;
  *status_out = wharf_weight_store_update(store, map, &o);
  (*jenv)->DeleteGlobalRef(jenv, f.call);
}

/** wharf_replica_group_update with a Java fold callback (run on every replica), as
 * wharf_swig_container_update_fold. */
void wharf_swig_replica_group_update_fold(JNIEnv* jenv, wharf_replica_group* group, const wharf_constant_map* map,
                                          const wharf_update_options* opts, jobject fold_call,
                                          wharf_status** status_out) {
  wharf_update_options o;
  wharf_swig_fold f;
  if (!opts) return;
  o = *opts;
  if (!wharf_swig_fold_begin(jenv, fold_call, &f, &o)) return;
  *status_out = wharf_replica_group_update(group, map, &o);
  (*jenv)->DeleteGlobalRef(jenv, f.call);
}

/** wharf_replica_group_update_ranks with a Java fold callback (this rank's), as
 * wharf_swig_container_update_fold; `map` may be NULL (a rank other than 0). */
void wharf_swig_replica_group_update_ranks_fold(JNIEnv* jenv, wharf_replica_group* group,
                                                const wharf_constant_map* map, const wharf_update_options* opts,
                                                jobject fold_call, wharf_status** status_out) {
  wharf_update_options o;
  wharf_swig_fold f;
  if (!opts) return;
  o = *opts;
  if (!wharf_swig_fold_begin(jenv, fold_call, &f, &o)) return;
  *status_out = wharf_replica_group_update_ranks(group, map, &o);
  (*jenv)->DeleteGlobalRef(jenv, f.call);
}

/**
 * Routes the library's log lines at `min_level` and above to dev.wharf.WharfLog.log
 * (`enable` != 0), or restores the library's default (lines at WARN and above to stderr).
 * Called by dev.wharf.Wharf, whose lock serialises the calls.
 */
void wharf_swig_log_to_java(JNIEnv* jenv, int32_t enable, int32_t min_level) {
  jclass cls;
  if (!enable) {
    wharf_log_set_callback(NULL, WHARF_LOG_WARN, NULL);
    return;
  }
  if (!wharf_swig_log_class) {
    if ((*jenv)->GetJavaVM(jenv, &wharf_swig_log_vm) != JNI_OK) {
      SWIG_JavaThrowException(jenv, SWIG_JavaRuntimeException, "GetJavaVM failed");
      return;
    }
    cls = (*jenv)->FindClass(jenv, "dev/wharf/WharfLog");
    if (!cls) return; /* NoClassDefFoundError pending */
    wharf_swig_log_method = (*jenv)->GetStaticMethodID(jenv, cls, "log", "(I[B)V");
    if (!wharf_swig_log_method) {
      (*jenv)->DeleteLocalRef(jenv, cls);
      return; /* NoSuchMethodError pending */
    }
    wharf_swig_log_class = (jclass)(*jenv)->NewGlobalRef(jenv, cls);
    (*jenv)->DeleteLocalRef(jenv, cls);
    if (!wharf_swig_log_class) {
      SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "a global reference for the log receiver");
      return;
    }
  }
  wharf_log_set_callback(wharf_swig_log_trampoline, (wharf_log_level)min_level, NULL);
}
%}
#endif
