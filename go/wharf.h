/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wharf.h - the public C API of Wharf, a runtime that keeps an inference model's weights
 * (constants) and per-conversation state on a GPU and lets a serving process change them
 * while it serves.
 *
 * This is the only public header. It is C99, includes only <stddef.h> and <stdint.h>, and
 * exposes no C++ or CUDA types: CUDA streams cross it as `void*` (a `cudaStream_t`).
 *
 * ---------------------------------------------------------------------------------------
 * Conventions (they hold for every function below unless its comment says otherwise)
 *
 * Errors.  A function that can fail returns `wharf_status*`: NULL means success; otherwise
 *   the caller owns the returned status and releases it with wharf_status_free(). There is
 *   no thread-local "last error" (it breaks under cgo, whose consecutive calls can land on
 *   different OS threads). Messages name the object and the value at fault. No function
 *   leaves partial changes behind when it fails, and no C++ exception crosses this API.
 *   Callbacks that return a status make it with wharf_status_create().
 *
 * Structs.  Every struct that crosses this API, array elements included, begins with
 *   `uint32_t struct_size`: the size of the struct as the caller compiled it (sizeof),
 *   which tells the library which fields exist. 0.3.0 is the first layout of every struct;
 *   later releases only append fields, each starting at or after the previous release's
 *   sizeof (never in its tail padding).
 *   - Options structs: fill them with their init macro, `wharf_X_options_init(&opts)`,
 *     which calls `wharf_X_options_init_sized(&opts, sizeof opts)`: it writes the defaults
 *     and struct_size and never a byte past the caller's struct. Bindings call the _sized
 *     functions with their own struct's size.
 *   - Input structs (views, declarations): set struct_size to sizeof. Arrays of structs
 *     (wharf_container_options' constants and states, a model's inputs) are walked at the
 *     element size their first element states; every element must state the same.
 *   - Output structs (wharf_device_info, wharf_memory_stats, wharf_constant_info, ...):
 *     set struct_size before the call; the library writes only the fields it covers and
 *     leaves struct_size as it found it. Output tensor views (wharf_run_get_tensor,
 *     wharf_constant_map_find, ...) are the one leniency: a struct_size of 0, one below
 *     the 0.3 layout, or one that is not a layout (an uninitialised view) gets the 0.3
 *     layout (every caller has at least that much), and on return struct_size says how
 *     many bytes were written. Arrays of output views (a
 *     model's outputs, an offloaded layer's views) are walked at the element size their
 *     first element states, as input arrays are.
 *   The library reads the fields the caller's struct_size covers and gives the others
 *   their defaults, so a program built against an older header keeps working. It refuses,
 *   changing nothing:
 *   - a struct_size that ends inside a field, or that is implausible (below 4, or above
 *     4096): WHARF_INVALID_ARGUMENT naming the struct and the field;
 *   - a non-zero byte past the fields this library knows (a caller built against a newer
 *     header asked for something this library cannot do): WHARF_UNSUPPORTED naming the
 *     struct and the byte's offset. Zero bytes there are fine.
 *
 * Names.  `wharf_<object>_<verb>[_<qualifier>]`, the object being the type of the first
 *   argument (wharf_model_run(model, run, ...), wharf_container_update, wharf_run_end).
 *   A query answering through an out-parameter (it returns a status) is
 *   `wharf_<object>_get_<noun>` (wharf_runtime_get_memory_stats, wharf_run_get_tensor); one
 *   returning its answer is `wharf_<object>_<noun>` (wharf_container_generation). A count
 *   is `num_<plural noun>`, in function and field names alike (wharf_container_num_constants,
 *   num_states); a `_size` is never a count, and byte counts end in `_bytes`.
 *   docs/naming.md has the whole rule.
 *
 * Results.  Every function returning wharf_status* is declared WHARF_NODISCARD (a warning
 *   where the compiler supports it, GCC and Clang: warn_unused_result): an ignored status
 *   is a leaked error.
 *
 * Ownership.  Written on every function. "Borrowed" pointers stay owned by the caller and
 *   must stay valid for the time stated. Every `*_free` function accepts NULL and releases
 *   the caller's reference: objects that depend on another keep it alive (a container its
 *   runtime and weight store, a session its containers, a run its container and session),
 *   and an object's memory is returned when its last reference goes.
 *
 * Threads.  Written on every type. In short: runtimes, containers, weight stores and
 *   sessions are safe to use from many threads at once; a constant map may be read from
 *   many threads but must not be modified while another thread uses it; statuses are plain
 *   values.
 *
 * Versions.  WHARF_VERSION_NUMBER (major * 10000 + minor * 100 + patch) is the header's
 *   version and wharf_version_number() the library's: a program that dlopens Wharf tests
 *   `wharf_version_number() >= 300` before calling something marked "Since 0.3.". Every
 *   declaration says the release that added it ("Since 0.3."), and each release's
 *   functions carry that release's symbol version: WHARF_0.3 for 0.3.0, the first promised
 *   ABI (0.1 and 0.2 were never released), then one node per later release (WHARF_0.4,
 *   ...), so a binary needing a newer library fails to load rather than failing at a call.
 *   The 0.3.0 header is frozen in tests/abi/wharf-0.3.0.h: a program compiled against it
 *   runs against every later 0.x/1.x library (make test checks it).
 *   WHARF_ABI_VERSION is the major version of the binary interface and the number in the
 *   SONAME (libwharf.so.1). It changes only on an incompatible change; bindings refuse a
 *   library whose wharf_abi_version() differs from theirs.
 *
 * Experimental tier.  Declarations at the end of this header, seen only when
 *   WHARF_EXPERIMENTAL is defined before including it, are new surfaces that no real
 *   integration has used yet. They carry the symbol version WHARF_EXPERIMENTAL, are left
 *   out of the ABI baseline (abi/libwharf.abi), and may change or go in any minor release
 *   (the CHANGELOG lists every change; a changed signature gets a new name, so a program
 *   built against the old one fails to load instead of misbehaving). Once one real
 *   integration has used a function unchanged, it moves to the stable part, with the
 *   symbol version of the release that moves it.
 * ---------------------------------------------------------------------------------------
 */
#ifndef WHARF_WHARF_H
#define WHARF_WHARF_H

#include <stddef.h>
#include <stdint.h>

/* The header's version. Since 0.3. */
#define WHARF_VERSION_MAJOR 0
#define WHARF_VERSION_MINOR 3
#define WHARF_VERSION_PATCH 0
#define WHARF_VERSION_NUMBER (WHARF_VERSION_MAJOR * 10000 + WHARF_VERSION_MINOR * 100 + WHARF_VERSION_PATCH)
#define WHARF_ABI_VERSION 1

#if defined(_WIN32)
#  if defined(WHARF_BUILDING_LIBRARY)
#    define WHARF_API __declspec(dllexport)
#  else
#    define WHARF_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define WHARF_API __attribute__((visibility("default")))
#else
#  define WHARF_API
#endif

/* On every function returning wharf_status*: ignoring the result warns (an unread status is
 * an unhandled error and a leak). GCC does not accept a (void) cast as using it: free it.
 * Since 0.3. */
#if defined(__GNUC__) || defined(__clang__)
#  define WHARF_NODISCARD __attribute__((warn_unused_result))
#else
#  define WHARF_NODISCARD
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================================
 * Status
 * ====================================================================================== */

/** Result codes. Values are stable across releases; new codes are only appended. Since 0.3. */
typedef enum wharf_code {
  WHARF_OK = 0,
  WHARF_INVALID_ARGUMENT = 1,   /* an argument is malformed (NULL, wrong shape, bad dtype) */
  WHARF_NOT_FOUND = 2,          /* a named thing does not exist (FQN, file) */
  WHARF_ALREADY_EXISTS = 3,     /* a name is taken (duplicate FQN in a map) */
  WHARF_OUT_OF_MEMORY = 4,      /* device or host allocation failed, or device_memory_limit hit */
  WHARF_RESOURCE_EXHAUSTED = 5, /* a budget other than memory was exceeded */
  WHARF_FAILED_PRECONDITION = 6,/* the object is not in a state that allows the call */
  WHARF_BUSY = 7,               /* the object is in use by another caller; try later */
  WHARF_UNSUPPORTED = 8,        /* not available in this build, on this backend, or in this version */
  WHARF_DEVICE_ERROR = 9,       /* the CUDA driver or runtime reported an error */
  WHARF_IO_ERROR = 10,          /* reading or writing a file failed */
  WHARF_DATA_CORRUPT = 11,      /* a file's contents are malformed */
  WHARF_INTERNAL = 12,          /* a bug in Wharf; please report it */
  WHARF_CANCELLED = 13          /* the caller's progress callback cancelled the call; nothing changed */
} wharf_code;

/** Opaque error. NULL always means success. Immutable once returned; any thread may read it. Since 0.3. */
typedef struct wharf_status wharf_status;

/**
 * Makes a status, for callbacks that return one to Wharf (wharf_fold_fn) and for bindings.
 * `message` is copied (NULL is ""); the caller owns the result (free it with
 * wharf_status_free, or return it from a callback, which passes ownership to Wharf).
 * WHARF_OK returns NULL, the only spelling of success. A value outside wharf_code gives
 * WHARF_INTERNAL with the value named in the message. Never NULL for another code: if
 * memory runs out, a static WHARF_OUT_OF_MEMORY status is returned (wharf_status_free
 * knows it). Thread-safe. Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_status_create(wharf_code code, const char* message);

/** The status's code; WHARF_OK for NULL. Since 0.3. */
WHARF_API wharf_code wharf_status_code(const wharf_status* status);

/** The status's message, owned by the status (valid until wharf_status_free). "" for NULL. Since 0.3. */
WHARF_API const char* wharf_status_message(const wharf_status* status);

/** Releases a status (statuses are not shared: this frees it). NULL is a no-op. Since 0.3. */
WHARF_API void wharf_status_free(wharf_status* status);

/** A static, human-readable name for a code ("INVALID_ARGUMENT"); "UNKNOWN" for others. Since 0.3. */
WHARF_API const char* wharf_code_name(wharf_code code);

/* ======================================================================================
 * Versions
 * ====================================================================================== */

/** The library's version as "MAJOR.MINOR.PATCH" (a static string). Since 0.3. */
WHARF_API const char* wharf_version(void);

/**
 * The library's version as major * 10000 + minor * 100 + patch (0.3.0 is 300), to compare
 * with WHARF_VERSION_NUMBER or with the release a function says it needs. Since 0.3.
 */
WHARF_API uint32_t wharf_version_number(void);

/** The library's ABI major version; compare with WHARF_ABI_VERSION from this header. Since 0.3. */
WHARF_API uint32_t wharf_abi_version(void);

/* ======================================================================================
 * Logging
 * ====================================================================================== */

/** Since 0.3. */
typedef enum wharf_log_level {
  WHARF_LOG_DEBUG = 0,
  WHARF_LOG_INFO = 1,
  WHARF_LOG_WARN = 2,
  WHARF_LOG_ERROR = 3,
  WHARF_LOG_OFF = 4
} wharf_log_level;

/**
 * Receives one log line (no trailing newline). `message` is valid only during the call.
 * May be called from any thread, including Wharf's worker threads, and concurrently; it must
 * not call back into Wharf functions that could log (keep it a plain hand-off). Since 0.3.
 */
typedef void (*wharf_log_fn)(wharf_log_level level, const char* message, void* user);

/**
 * Routes Wharf's log lines at `min_level` and above to `fn` (process-wide). `fn == NULL`
 * restores the default (lines at WARN and above to stderr; the environment variable
 * WHARF_LOG_LEVEL=debug|info|warn|error|off changes the default level). Thread-safe; a
 * callback being replaced may still receive lines already in progress on other threads.
 * Since 0.3.
 */
WHARF_API void wharf_log_set_callback(wharf_log_fn fn, wharf_log_level min_level, void* user);

/* ======================================================================================
 * Data types and tensor views
 * ====================================================================================== */

/**
 * Element types: the safetensors format's dtypes, named as there (wharf_dtype_name). Values
 * are stable; new ones are only appended. F4, F6_E2M3 and F6_E3M2 are narrower than a byte
 * and packed (a tensor of n elements is n * bits / 8 bytes, and its bit size must be a
 * multiple of 8); views of them must be contiguous. Since 0.3.
 */
typedef enum wharf_dtype {
  WHARF_DTYPE_F32 = 0,
  WHARF_DTYPE_F16 = 1,
  WHARF_DTYPE_BF16 = 2,
  WHARF_DTYPE_F64 = 3,
  WHARF_DTYPE_F8_E4M3 = 4,
  WHARF_DTYPE_F8_E5M2 = 5,
  WHARF_DTYPE_I8 = 6,
  WHARF_DTYPE_U8 = 7,
  WHARF_DTYPE_I16 = 8,
  WHARF_DTYPE_I32 = 9,
  WHARF_DTYPE_I64 = 10,
  WHARF_DTYPE_BOOL = 11,
  WHARF_DTYPE_U16 = 12,
  WHARF_DTYPE_U32 = 13,
  WHARF_DTYPE_U64 = 14,
  WHARF_DTYPE_C64 = 15,          /* complex of two F32 (real, imaginary) */
  WHARF_DTYPE_F8_E8M0 = 16,      /* OCP MX scale: 8-bit exponent, no sign, no mantissa */
  WHARF_DTYPE_F8_E4M3FNUZ = 17,  /* FP8 E4M3, finite, unsigned zero (AMD) */
  WHARF_DTYPE_F8_E5M2FNUZ = 18,  /* FP8 E5M2, finite, unsigned zero (AMD) */
  WHARF_DTYPE_F4 = 19,           /* OCP MXFP4 E2M1: 4 bits, two per byte */
  WHARF_DTYPE_F6_E2M3 = 20,      /* OCP MXFP6: 6 bits, four per three bytes */
  WHARF_DTYPE_F6_E3M2 = 21       /* OCP MXFP6: 6 bits, four per three bytes */
} wharf_dtype;

/**
 * Bytes per element of a dtype of whole bytes; 0 for a sub-byte dtype (F4, F6_*: use
 * wharf_dtype_bits) and for a value outside wharf_dtype. Since 0.3.
 */
WHARF_API size_t wharf_dtype_size(wharf_dtype dtype);

/**
 * Bits per element (4, 6, 8, 16, 32 or 64); 0 for a value outside wharf_dtype. A tensor of n
 * elements holds n * bits / 8 bytes. Thread-safe. Since 0.3.
 */
WHARF_API size_t wharf_dtype_bits(wharf_dtype dtype);

/** The safetensors spelling ("F32", "BF16", "F8_E4M3", "BOOL", ...); NULL for an unknown value. Since 0.3. */
WHARF_API const char* wharf_dtype_name(wharf_dtype dtype);

/** Parses a safetensors dtype name. WHARF_NOT_FOUND for an unknown name. Since 0.3. */
WHARF_API WHARF_NODISCARD wharf_status* wharf_dtype_from_name(const char* name, wharf_dtype* out);

/** Since 0.3. */
typedef enum wharf_device_type {
  WHARF_DEVICE_CPU = 0,   /* host memory, pageable or pinned */
  WHARF_DEVICE_CUDA = 1   /* CUDA device memory on device `device_index` */
} wharf_device_type;

/** Maximum number of dimensions of a tensor. Since 0.3. */
#define WHARF_MAX_DIMS 8

/**
 * wharf_tensor_view.flags: the memory must not be written. The library sets it on the
 * output views it fills whose memory others read: constants in a run (their storage is
 * shared with other generations, containers and open runs; in a fold callback's run, every
 * constant except derived ones and the ones the update gave fresh storage), the entries of
 * a map loaded from a file (a read-only mapping) and offloaded slots. Session state, a
 * model's outputs and the entries of a map the caller built (the caller's memory) carry 0.
 * Writing through a read-only view is undefined behaviour that changes what others read;
 * the bindings refuse it. Since 0.3.
 */
#define WHARF_VIEW_READ_ONLY 0x1u

/**
 * A borrowed view of a tensor in someone else's memory. Nothing here is owned: the data
 * and the shape/strides arrays belong to whoever filled the view and must outlive its use.
 * Element [i0, i1, ...] lives at (char*)data + byte_offset + (i0*strides[0] + i1*strides[1]
 * + ...) * element size. `strides` are in elements; NULL means contiguous row-major.
 * `ndim` 0 is a scalar (one element; shape may be NULL). Since 0.3.
 *
 * As an input, set struct_size to sizeof(wharf_tensor_view) and flags to 0 or
 * WHARF_VIEW_READ_ONLY (inputs are only read either way; other bits: WHARF_UNSUPPORTED). As
 * an output (wharf_run_get_tensor, wharf_constant_map_find, ...) see "Structs" above; output
 * views point at element 0 (byte_offset 0), and flags says whether the memory may be written.
 */
typedef struct wharf_tensor_view {
  uint32_t struct_size;
  uint32_t flags;        /* WHARF_VIEW_* */
  void* data;
  wharf_dtype dtype;
  wharf_device_type device_type;
  int32_t device_index;
  int32_t ndim;
  const int64_t* shape;
  const int64_t* strides;
  uint64_t byte_offset;  /* bytes from data to element 0; default 0 */
} wharf_tensor_view;

/* ======================================================================================
 * Runtime: one device and its streams, allocator and memory accounting
 *
 * Threads: a runtime is safe to use from many threads at once. Objects created from it
 * (containers, weight stores, sessions) keep it alive: the runtime may be freed first.
 * ====================================================================================== */

/** Since 0.3. */
typedef struct wharf_runtime wharf_runtime;

/** Since 0.3. */
typedef enum wharf_backend {
  WHARF_BACKEND_AUTO = 0,  /* CUDA when a device is usable, the host backend otherwise (logged) */
  WHARF_BACKEND_CUDA = 1,  /* a CUDA GPU; fails with WHARF_UNSUPPORTED/DEVICE_ERROR if none */
  WHARF_BACKEND_HOST = 2   /* host memory and worker-thread streams; runs anywhere */
} wharf_backend;

/** Since 0.3. */
typedef struct wharf_runtime_options {
  uint32_t struct_size;
  wharf_backend backend;         /* default WHARF_BACKEND_AUTO */
  int32_t device_index;          /* CUDA device ordinal; default 0 */
  uint64_t device_memory_limit;  /* bytes of device memory Wharf may hold; 0 = no cap */
  uint32_t copy_threads;         /* host threads that fill the pinned staging ring;
                                    0 = auto: min(12, cores - 1) */
  uint64_t staging_bytes;        /* size of the pinned staging ring (512 KiB chunks);
                                    0 = auto: 4 MiB per copy thread */
} wharf_runtime_options;

/**
 * Fills the defaults of a wharf_runtime_options of `struct_size` bytes (sizeof as the
 * caller compiled it) and sets its struct_size; writes no byte past struct_size. NULL, or a
 * size below 4, is a no-op. Call it through the macro wharf_runtime_options_init(&opts).
 * Since 0.3.
 */
WHARF_API void wharf_runtime_options_init_sized(wharf_runtime_options* opts, size_t struct_size);
#define wharf_runtime_options_init(opts) wharf_runtime_options_init_sized((opts), sizeof(*(opts)))

/**
 * Creates a runtime. `opts` is borrowed for the call; NULL means defaults. On success the
 * caller owns `*out` and frees it with wharf_runtime_free(). Reads the process's WHARF_*
 * environment variables (docs/environment.md; the first call logs a warning for each name
 * Wharf does not read): do not change the environment from other threads meanwhile.
 * Errors: WHARF_INVALID_ARGUMENT (bad option values, or a malformed WHARF_DEFER_RUN_FREES),
 * WHARF_UNSUPPORTED (CUDA asked for in a build without CUDA, or no device),
 * WHARF_DEVICE_ERROR (CUDA failed to initialise). Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_runtime_create(const wharf_runtime_options* opts,
                                                             wharf_runtime** out);

/**
 * Releases the caller's reference. Containers, weight stores and sessions created from the
 * runtime keep it alive; when the last reference goes, the runtime waits for its streams to
 * drain, then releases them and its memory. NULL is a no-op. No other thread may be using
 * this handle. Since 0.3.
 */
WHARF_API void wharf_runtime_free(wharf_runtime* runtime);

/** The backend the runtime chose (never WHARF_BACKEND_AUTO). Thread-safe. Since 0.3. */
WHARF_API wharf_backend wharf_runtime_backend(const wharf_runtime* runtime);

/** Since 0.3. */
typedef struct wharf_device_info {
  uint32_t struct_size;
  wharf_backend backend;
  int32_t device_index;
  char name[256];               /* "NVIDIA H100 80GB HBM3", or "host" */
  uint64_t total_memory;        /* bytes; host backend: physical memory */
  uint64_t free_memory;         /* bytes at the time of the call */
  int32_t compute_major;        /* CUDA compute capability; 0 on the host backend */
  int32_t compute_minor;
} wharf_device_info;

/**
 * Describes the runtime's device. `out->struct_size` must be set by the caller (fields past
 * it are not written). Thread-safe. Errors: WHARF_INVALID_ARGUMENT, WHARF_DEVICE_ERROR.
 * Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_runtime_get_device_info(const wharf_runtime* runtime,
                                                                  wharf_device_info* out);

/**
 * Waits until all work Wharf enqueued on the runtime's own streams has finished, and until
 * storage that ended runs let go of has been freed (Wharf frees it on a thread of its own,
 * not on the thread ending a run). A stream being captured into a CUDA graph at the time
 * (a caller's, or one Wharf is capturing on) is left alone: synchronizing it would
 * invalidate the capture. Thread-safe. Errors: WHARF_DEVICE_ERROR (naming the failed work).
 * Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_runtime_synchronize(wharf_runtime* runtime);

/* --- memory accounting ---------------------------------------------------------------- */

/** Allocation tags; per-tag figures are indexed by these values. Room for 16. Since 0.3. */
typedef enum wharf_memory_tag {
  WHARF_MEM_CONSTANTS = 0,
  WHARF_MEM_STATE = 1,
  WHARF_MEM_STAGING = 2,
  WHARF_MEM_WORKSPACE = 3,
  WHARF_MEM_OFFLOAD = 4,
  WHARF_MEM_GRAPH = 5
} wharf_memory_tag;

/** Since 0.3. */
#define WHARF_MEM_TAG_CAPACITY 16

/**
 * Bytes Wharf holds. current[tag]/peak[tag] count every allocation with that tag, device
 * and pinned host alike; device_* count device memory only (what device_memory_limit caps;
 * on the host backend, "device" memory is the host memory standing in for it);
 * pinned_host_* count page-locked host memory. Since 0.3.
 */
typedef struct wharf_memory_stats {
  uint32_t struct_size;
  uint64_t current[WHARF_MEM_TAG_CAPACITY];
  uint64_t peak[WHARF_MEM_TAG_CAPACITY];
  uint64_t device_current;
  uint64_t device_peak;
  uint64_t pinned_host_current;
  uint64_t pinned_host_peak;
} wharf_memory_stats;

/**
 * Reads the runtime's memory figures into `out` (the caller sets out->struct_size; fields
 * past it are not written). Thread-safe; figures are a consistent snapshot per counter.
 * Errors: WHARF_INVALID_ARGUMENT (NULL arguments, a struct_size that ends inside a field).
 * Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_runtime_get_memory_stats(const wharf_runtime* runtime,
                                                                   wharf_memory_stats* out);

/** Sets every peak figure to its current value. Thread-safe. NULL is a no-op. Since 0.3. */
WHARF_API void wharf_runtime_reset_peak(wharf_runtime* runtime);

/* ======================================================================================
 * Constant maps: FQN -> borrowed tensor view
 *
 * A map names tensors that live in the caller's memory (pageable host, pinned host or
 * device memory). It copies names, shapes and strides; it never copies or owns data,
 * except for a map loaded from a safetensors file, which owns the file's memory mapping.
 * Entries keep insertion order.
 *
 * Threads: many threads may read one map at once; modifying it (set) while any other
 * thread uses it is not allowed.
 * ====================================================================================== */

/** Since 0.3. */
typedef struct wharf_constant_map wharf_constant_map;

/** Creates an empty map owned by the caller (free with wharf_constant_map_free). Since 0.3. */
WHARF_API WHARF_NODISCARD wharf_status* wharf_constant_map_create(wharf_constant_map** out);

/**
 * Adds `fqn` -> `view`. The name, shape and strides are copied; `view->data` is borrowed
 * and must stay valid while the map is used. A view may be strided and start byte_offset
 * bytes into data (the map stores data + byte_offset); updates still need contiguous
 * sources (they say which constant is not). Errors: WHARF_INVALID_ARGUMENT (NULL or empty
 * name, NULL data with a non-empty shape or a byte_offset, unknown dtype or device type,
 * ndim outside 0..WHARF_MAX_DIMS, a negative dimension or stride, byte size overflow, a bad
 * struct_size), WHARF_UNSUPPORTED (non-zero fields of a newer header), WHARF_ALREADY_EXISTS
 * (the name is in the map). On error the map is unchanged. Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_constant_map_set(wharf_constant_map* map, const char* fqn,
                                                               const wharf_tensor_view* view);

/**
 * Looks up `fqn`. On success `*out` is a view whose shape/strides point into the map
 * (valid while the map lives and is not modified); see wharf_tensor_view for how its
 * struct_size is used. Errors: WHARF_NOT_FOUND naming fqn. Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_constant_map_find(const wharf_constant_map* map,
                                                                const char* fqn, wharf_tensor_view* out);

/** Number of entries; 0 for NULL. Since 0.3. */
WHARF_API size_t wharf_constant_map_num_entries(const wharf_constant_map* map);

/**
 * The i-th entry in insertion order. `*fqn` (may be NULL to skip) and the view's arrays
 * point into the map. Errors: WHARF_INVALID_ARGUMENT for i >= size. Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_constant_map_get_entry(const wharf_constant_map* map, size_t i,
                                                                 const char** fqn, wharf_tensor_view* out);

/**
 * Memory-maps a safetensors file read-only and returns a map of its tensors (CPU views
 * into the mapping, in file order). The mapping lives as long as the map, and the file must
 * not be truncated meanwhile: touching a view of a page the file lost raises SIGBUS (the
 * mapping's nature; replace files by rename, which keeps the mapped file intact). The
 * *_update_from_file calls read files with pread instead and report a shrunk file as
 * WHARF_IO_ERROR. The whole file is
 * validated first, by the rules of the reference implementation (the `safetensors` crate):
 * header length (at most 100,000,000 bytes) and JSON, dtype names, shape x dtype bits = byte
 * range, and tensors that tile the data section exactly (sorted by offset, the first at 0,
 * each where the previous ends, the last at the end of the file: no overlap, no hole, no
 * trailing byte), `__metadata__` a string->string object (or null). docs/decisions.md lists
 * where Wharf is stricter.
 *
 * A path ending in ".json" is a sharded checkpoint's index (Hugging Face's
 * "model.safetensors.index.json": {"metadata": {...}, "weight_map": {tensor: shard file}}):
 * every shard (a file name relative to the index's directory: no absolute path, no ".."
 * component) is mapped and validated whole, every tensor the index lists must be in the shard
 * it names and every tensor of a shard must be listed for it; the map holds them all in the
 * index's order (its metadata: the index's "metadata" members that are strings, numbers or
 * booleans, as text) and keeps every shard's mapping.
 *
 * `*out` is owned by the caller. Errors: WHARF_NOT_FOUND/WHARF_IO_ERROR (a file, named),
 * WHARF_DATA_CORRUPT (naming the file, the tensor and what is wrong), WHARF_UNSUPPORTED (a
 * valid file holding what Wharf cannot: a dtype name it does not know, more than
 * WHARF_MAX_DIMS dimensions, a dimension above INT64_MAX, an empty name, NUL in a name or in
 * metadata; named), WHARF_INVALID_ARGUMENT (NULL arguments). Thread-safe. Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_constant_map_load_safetensors(const char* path,
                                                                            wharf_constant_map** out);

/**
 * Number of `__metadata__` entries of a map loaded from safetensors (0 for other maps).
 * Since 0.3.
 */
WHARF_API size_t wharf_constant_map_num_metadata_entries(const wharf_constant_map* map);
/** The i-th `__metadata__` key/value (strings owned by the map). Since 0.3. */
WHARF_API WHARF_NODISCARD wharf_status* wharf_constant_map_get_metadata_entry(const wharf_constant_map* map,
                                                                          size_t i, const char** key,
                                                                          const char** value);

/**
 * Sets `__metadata__` entry `key` to `value` (both copied), on any map: a new key is
 * appended, an existing one keeps its place and takes the new value;
 * wharf_constant_map_save_safetensors writes them. Key and value may be empty; they must be
 * valid UTF-8 (and, being C strings, hold no NUL). Pointers from
 * wharf_constant_map_get_metadata_entry are invalidated. Modifies the map: no other thread may
 * use it during the call. Errors:
 * WHARF_INVALID_ARGUMENT (NULL arguments, invalid UTF-8; naming the key), and then the map is
 * unchanged. Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_constant_map_set_metadata(wharf_constant_map* map, const char* key,
                                                                        const char* value);

/**
 * Writes every entry of `map` to a safetensors file at `path` (created or replaced
 * atomically: written to a temporary file, then renamed). Entries must be host-readable
 * (WHARF_DEVICE_CPU); strided views are written contiguous. Errors: WHARF_INVALID_ARGUMENT
 * (a CUDA view, naming it), WHARF_IO_ERROR. Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_constant_map_save_safetensors(const wharf_constant_map* map,
                                                                            const char* path);

/**
 * Releases the caller's reference, which is a map's only one: frees the map (and its file
 * mapping, if any). NULL is a no-op. Since 0.3.
 */
WHARF_API void wharf_constant_map_free(wharf_constant_map* map);

/* ======================================================================================
 * Containers: one model's constants, double-buffered in copy-on-write generations
 *
 * A container declares its constants (FQN, dtype, shape, placement) and holds an *active*
 * generation (what new runs read) and an *inactive* one (what the next swap makes active).
 * Storage is per constant, in refcounted slots: the first update after a swap starts a new
 * inactive generation that shares every slot of the active one, and only the constants the
 * update writes get fresh slots. Extra memory during an update is therefore the bytes
 * updated, not a second copy of the model. Constants an update leaves out hold the active
 * values, never stale ones.
 *
 * Threads: every container function is safe to call from many threads at once. Runs
 * (wharf_run_begin/end) never block on updates; two updates of one container at once are
 * not interleaved: the second returns WHARF_BUSY. A container keeps its runtime (and its
 * weight store) alive: they may be freed first. Strings are UTF-8.
 * ====================================================================================== */

/** Since 0.3. */
typedef struct wharf_container wharf_container;
/** One conversation's mutable state (see the sessions API). Declared here so runs can name it. Since 0.3. */
typedef struct wharf_session wharf_session;
/** A lease: one generation (and session) pinned for one execution. Since 0.3. */
typedef struct wharf_run wharf_run;
/** Shared storage for constants of several containers (see the weight store API). Since 0.3. */
typedef struct wharf_weight_store wharf_weight_store;

/** Since 0.3. */
typedef enum wharf_placement {
  WHARF_PLACEMENT_DEVICE = 0,  /* device memory (host memory on the host backend) */
  WHARF_PLACEMENT_HOST = 1     /* pinned host memory, even for a CUDA model */
} wharf_placement;

/** Constant flags. Since 0.3. */
#define WHARF_CONSTANT_DERIVED 0x1u /* computed by the update's fold callback, never from a map */

/**
 * One constant's declaration, an element of wharf_container_options.constants. Set
 * struct_size to sizeof(wharf_constant_decl); every element of one array must state the
 * same size. Since 0.3.
 */
typedef struct wharf_constant_decl {
  uint32_t struct_size;
  const char* fqn;
  wharf_dtype dtype;
  int32_t ndim;
  const int64_t* shape;
  wharf_placement placement;
  uint32_t flags;
} wharf_constant_decl;

/**
 * One per-session mutable tensor (a KV cache, a recurrent or convolution state). Every
 * session over the container gets its own buffer; `initial` (borrowed for the create call,
 * contiguous, on the host or the runtime's device; NULL = zeros) is captured once into the
 * container's template and is what a new or reset session starts from. struct_size as for
 * wharf_constant_decl. Since 0.3.
 */
typedef struct wharf_state_decl {
  uint32_t struct_size;
  const char* fqn;
  wharf_dtype dtype;
  int32_t ndim;
  const int64_t* shape;
  const wharf_tensor_view* initial;
} wharf_state_decl;

/**
 * Progress of a long call (an update, a load), and the caller's way to cancel it: `done` of
 * `total` bytes have been copied (`total` is known when the call starts and does not change).
 * Called on the calling thread, never concurrently with itself, at least once per 64 MiB
 * copied (today every 16 MiB), and once more with done == total before the call publishes
 * or stages anything.
 * Return 0 to go on; any other value cancels: the call stops copying, waits for the copies
 * already in flight (so nothing still reads the sources), releases what it allocated and
 * returns WHARF_CANCELLED, having changed nothing. The callback must not call into the object
 * being updated (it would answer WHARF_BUSY). Since 0.3.
 */
typedef int32_t (*wharf_progress_fn)(uint64_t done, uint64_t total, void* user);

/** Since 0.3. */
typedef struct wharf_container_options {
  uint32_t struct_size;
  const char* name;                        /* for messages; default "model" */
  const wharf_constant_decl* constants;    /* borrowed for the create call */
  size_t num_constants;
  /** Share constants with the other containers of this store (NULL = no sharing). The
   *  container keeps the store alive. */
  wharf_weight_store* store;
  const wharf_state_decl* states;          /* borrowed for the create call */
  size_t num_states;
  /** Budget for the state of all live sessions that cover this container, in bytes
   *  (0 = none): a session whose creation would pass it gets WHARF_RESOURCE_EXHAUSTED. */
  uint64_t max_session_bytes;
  /** wharf_container_create_from_map: progress and cancellation of loading the map
   *  (wharf_progress_fn); NULL = none. Not used by wharf_container_create. */
  wharf_progress_fn progress;
  void* progress_user;
  /** State arena (Since 0.3 (experimental); see "State arenas and batched runs" in the
   *  experimental tier). `state_arena_of`: keep this container's states in the arena of that
   *  container (borrowed for the create call; the arena lives while any container or
   *  session uses it), whose states must include these with equal dtype and shape; the
   *  arena's initial values are those of the container that created it. NULL = none. */
  const wharf_container* state_arena_of;
  /** > 0: keep the state of up to this many sessions in one allocation per state tensor,
   *  [session_capacity, ...shape], allocated now (WHARF_MEM_STATE); each session takes a
   *  slot. 0 = every session allocates buffers of its own. Not with state_arena_of. */
  uint32_t session_capacity;
} wharf_container_options;

/**
 * Fills the defaults of a wharf_container_options of `struct_size` bytes (pass
 * sizeof(wharf_container_options) as the caller compiled it) and sets its struct_size; the
 * library writes no byte past struct_size. C and C++ callers use the macro below, which
 * passes sizeof for them; bindings call this function with their struct's size. Since 0.3.
 */
WHARF_API void wharf_container_options_init_sized(wharf_container_options* opts, size_t struct_size);
#define wharf_container_options_init(opts) \
  wharf_container_options_init_sized((opts), sizeof(*(opts)))

/**
 * Declares a container (constants only; no weights yet: runs fail with
 * WHARF_FAILED_PRECONDITION until the first update has been swapped in). `opts` and its
 * arrays are borrowed for the call; the caller owns `*out`. With `opts->store`, every
 * non-derived constant is registered in the store; an update that names a constant this
 * container has never held takes the store's storage for it, when the store holds it,
 * instead of copying (the first update must still name every constant). With states,
 * their initial values are captured now. Errors: WHARF_INVALID_ARGUMENT (a bad or
 * duplicate declaration, a state FQN equal to a constant's, an initial value of the wrong
 * dtype/shape, a bad struct_size, or a declaration that disagrees with the store's under
 * the same FQN: the message names both containers), WHARF_UNSUPPORTED (non-zero fields of
 * a newer header), WHARF_OUT_OF_MEMORY. Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_container_create(wharf_runtime* runtime,
                                                               const wharf_container_options* opts,
                                                               wharf_container** out);

/**
 * Declares one device-placed constant per entry of `map` (in map order), loads them and
 * makes them active: the container is ready to run. `opts` may be NULL; its `constants`
 * must be empty (its store and states apply). With a store, constants the store already
 * holds with equal dtype, shape and placement are shared: no allocation and no copy for
 * them (the store assumes one FQN names one weight; the map's data for them is not read).
 * The map is borrowed for the call. Errors: as wharf_container_create and _update.
 * Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_container_create_from_map(wharf_runtime* runtime,
                                                                        const wharf_constant_map* map,
                                                                        const wharf_container_options* opts,
                                                                        wharf_container** out);

/**
 * Releases the caller's reference. Sessions over the container and its open runs keep it
 * alive; when the last reference goes, the container waits (on the host) for the device to
 * finish the runs that read it, then releases its memory. NULL is a no-op. Since 0.3.
 */
WHARF_API void wharf_container_free(wharf_container* container);

/** Since 0.3. */
typedef enum wharf_update_target {
  WHARF_TARGET_INACTIVE = 0,        /* write the inactive generation; swap to publish */
  WHARF_TARGET_ACTIVE_IN_PLACE = 1  /* write and publish at once, reusing storage when it can */
} wharf_update_target;

/**
 * Computes the WHARF_CONSTANT_DERIVED constants of the generation being written (e.g. a
 * transposed or quantised weight) with the caller's own kernels. `target` is a run over
 * that generation: wharf_run_get_tensor gives every constant, derived ones included, and
 * wharf_run_stream the stream to launch on. Only derived constants and the constants this
 * update gave fresh storage may be written (in a weight store update's fold: derived ones
 * only, the others being shared by the store's members): every other constant's view is
 * WHARF_VIEW_READ_ONLY, because its storage is shared with the active generation, which
 * open and new runs read. The callback must not end the run. Return
 * NULL on success or a status (made with wharf_status_create; ownership passes to Wharf)
 * to abort the update: the update then fails with that status's code, and its message
 * after a prefix naming the container ("container 'm': fold callback: " + message).
 * Since 0.3.
 */
typedef wharf_status* (*wharf_fold_fn)(wharf_run* target, void* user);

/** Since 0.3. */
typedef struct wharf_update_options {
  uint32_t struct_size;
  wharf_update_target target;  /* default WHARF_TARGET_INACTIVE */
  int32_t require_full;        /* nonzero: the map must name every non-derived constant */
  wharf_fold_fn fold;          /* required when the container declares derived constants */
  void* fold_user;
  /** A cudaStream_t whose work so far the update's reads of device sources wait for, on
   *  the device (an event recorded on it when the call starts; the host does not wait): a
   *  trainer's or an NCCL receive's stream that produced the new weights. NULL = none. Must
   *  be NULL on the host backend (WHARF_INVALID_ARGUMENT). Host sources are read as the
   *  call reads them (host memory has no stream order). */
  void* wait_stream;
  /** WHARF_TARGET_ACTIVE_IN_PLACE: how long to wait for open runs that pinned a written
   *  constant before giving that constant fresh storage instead (its bytes of extra
   *  memory). Default 1000; 0 = never wait. */
  uint32_t in_place_max_wait_ms;
  /** Progress and cancellation (wharf_progress_fn); NULL = none. `progress_user` is passed
   *  to it. For a weight store or replica group update, `total` counts each source byte once. */
  wharf_progress_fn progress;
  void* progress_user;
} wharf_update_options;

/**
 * Fills the defaults of a wharf_update_options of `struct_size` bytes and sets its
 * struct_size, writing no byte past it; see wharf_runtime_options_init_sized. Call it
 * through the macro wharf_update_options_init(&opts). Since 0.3.
 */
WHARF_API void wharf_update_options_init_sized(wharf_update_options* opts, size_t struct_size);
#define wharf_update_options_init(opts) wharf_update_options_init_sized((opts), sizeof(*(opts)))

/**
 * Writes the map's tensors into the container and returns when the data is in place.
 * Sources may be pageable host, pinned host or device memory, mixed in one map: pinned
 * sources are copied by DMA directly, pageable ones through the runtime's pinned staging
 * ring (filled by copy_threads host threads so memcpy and DMA overlap), device ones
 * device-to-device (after opts->wait_stream's work, when given). The map is borrowed for
 * the call.
 *
 * Everything is validated before anything is copied: an unknown FQN (WHARF_NOT_FOUND), a
 * derived constant, a wrong dtype or shape, a non-contiguous view, a device the runtime
 * cannot read, or NULL data (WHARF_INVALID_ARGUMENT), each naming the constant, change
 * nothing. Out of device memory midway (WHARF_OUT_OF_MEMORY) leaves the active generation
 * untouched and releases what the update allocated. A fold callback's error aborts the
 * update the same way. Thread-safe; a concurrent update of the same container returns
 * WHARF_BUSY. A model of this container with CUDA graphs enabled is prepared for the new
 * generation before the call returns, on the calling thread (wharf_model_enable_graphs: its
 * folded constants and a spare graph per bucket); that never fails the update.
 *
 * WHARF_TARGET_ACTIVE_IN_PLACE writes and publishes at once: when the call returns, the
 * container has a new generation id (wharf_container_generation changes, and runs begun
 * afterwards report it) holding the new data. A written constant whose storage nothing
 * else references (no other generation, container, store entry, or open run) is
 * overwritten in place, so it costs no memory: the copy waits (on the device) for runs
 * already ended, and the call waits (on the host, up to in_place_max_wait_ms) for open
 * runs that pinned it. Storage still pinned after that, or shared, is left to its readers
 * and the constant gets fresh storage (its bytes of extra memory). Open runs never see
 * their data change. The inactive generation, if any, is not changed. Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_container_update(wharf_container* container,
                                                               const wharf_constant_map* map,
                                                               const wharf_update_options* opts);

/**
 * wharf_container_update from a file: opens the safetensors file at `path` (or, for a
 * path ending in ".json", every shard of a sharded checkpoint's index; see
 * wharf_constant_map_load_safetensors), validates all of it, then writes its tensors into the
 * container as wharf_container_update writes a map's, as one update. The file may be partial:
 * it names a subset of the container's constants (opts->require_full demands all of them).
 * The file is not memory-mapped: its header is read, then its tensors are read with pread
 * (from the page cache) straight into the pinned staging ring, so no host copy of the file is
 * made: extra host memory is the staging ring (and the header while it is parsed). Every file
 * is closed before the call returns. `path` and `opts` (NULL: defaults) are borrowed for the
 * call.
 *
 * Validated first, changing nothing on failure: the file (WHARF_NOT_FOUND, WHARF_IO_ERROR,
 * WHARF_DATA_CORRUPT, WHARF_UNSUPPORTED as wharf_constant_map_load_safetensors; a corrupt
 * shard of an index fails the whole set), then every tensor against the container
 * (WHARF_NOT_FOUND for a tensor the container does not declare, WHARF_INVALID_ARGUMENT for a
 * dtype or shape that differs, each naming it). The other errors and the rules of targets,
 * fold callbacks and concurrency (WHARF_BUSY) are wharf_container_update's. A file that
 * shrinks after it was validated is WHARF_IO_ERROR naming the file (and, where a read ran
 * short, the tensor and the offset), never a crash: truncated before the copy starts, nothing
 * is written; while the copy runs, the update into the inactive generation stages nothing,
 * but an in-place update (WHARF_TARGET_ACTIVE_IN_PLACE) may leave the constants it was
 * overwriting with part of the new bytes. Replace model files by rename, as
 * wharf_constant_map_save_safetensors does. Thread-safe. Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_container_update_from_file(wharf_container* container, const char* path,
                                                                         const wharf_update_options* opts);

/**
 * Makes the inactive generation active, in O(1) without synchronizing the device: runs
 * already begun keep the generation they pinned, and its slots are reclaimed only after
 * their completion events fire. The previous active generation becomes the inactive one, so
 * swapping again without an update rolls back. Errors: WHARF_FAILED_PRECONDITION when
 * nothing is staged (after wharf_container_free_inactive, or before any update), when a
 * non-derived constant of a fresh container was never written (naming it), or when the
 * staged weights came from wharf_weight_store_update and are not yet published (a member's
 * own swap would break the store swap's atomicity: publish them with
 * wharf_weight_store_swap); WHARF_BUSY while an in-place update runs. Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_container_swap(wharf_container* container);

/**
 * Releases the inactive generation (stream-ordered: after the runs that read it).
 * Errors: WHARF_FAILED_PRECONDITION (it holds an unpublished weight store update),
 * WHARF_BUSY (an in-place update runs). Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_container_free_inactive(wharf_container* container);

/** The active generation's id (0 before the first swap); every swap or in-place update gives a new, larger id. Since 0.3. */
WHARF_API uint64_t wharf_container_generation(const wharf_container* container);

/** The container's name (wharf_container_options.name; owned by the container). "" for NULL. Since 0.3. */
WHARF_API const char* wharf_container_name(const wharf_container* container);

/** Number of constant declarations; 0 for NULL. Since 0.3. */
WHARF_API size_t wharf_container_num_constants(const wharf_container* container);

/** Since 0.3. */
typedef struct wharf_constant_info {
  uint32_t struct_size;
  const char* fqn;        /* owned by the container */
  wharf_dtype dtype;
  int32_t ndim;
  const int64_t* shape;   /* owned by the container */
  wharf_placement placement;
  uint32_t flags;
  uint64_t nbytes;
} wharf_constant_info;

/** The i-th declaration (the caller sets out->struct_size). WHARF_INVALID_ARGUMENT past the end. Since 0.3. */
WHARF_API WHARF_NODISCARD wharf_status* wharf_container_get_constant_info(const wharf_container* container, size_t i,
                                                                      wharf_constant_info* out);

/** Number of state declarations; 0 for NULL. Since 0.3. */
WHARF_API size_t wharf_container_num_states(const wharf_container* container);

/** Since 0.3. */
typedef struct wharf_state_info {
  uint32_t struct_size;
  const char* fqn;        /* owned by the container */
  wharf_dtype dtype;
  int32_t ndim;
  const int64_t* shape;   /* owned by the container */
  uint64_t nbytes;        /* bytes of one session's buffer */
} wharf_state_info;

/**
 * The i-th state declaration, in declaration order (the caller sets out->struct_size).
 * WHARF_INVALID_ARGUMENT past the end. Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_container_get_state_info(const wharf_container* container, size_t i,
                                                                   wharf_state_info* out);

/**
 * Called once no generation and no run references a user-managed constant's memory any
 * more; from any thread, possibly a Wharf worker thread. Must not call into Wharf. Since 0.3.
 */
typedef void (*wharf_release_fn)(void* data, void* user);

/**
 * Binds caller-owned memory to constant `fqn` of the inactive generation without a copy
 * (as an update of that one constant would). The memory must match the declaration's dtype
 * and shape, be contiguous, and live where the constant is placed (device memory of the
 * runtime's device for DEVICE placement on CUDA; host memory otherwise). `release` (may be
 * NULL) is called with data + byte_offset when Wharf no longer references it. Errors as
 * wharf_container_update; on error `release` is not called and nothing changes. Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_container_bind_user_constant(wharf_container* container,
                                                                           const char* fqn,
                                                                           const wharf_tensor_view* view,
                                                                           wharf_release_fn release,
                                                                           void* user);

/* --- runs ------------------------------------------------------------------------------ */

/**
 * Begins a run: pins the active generation and `session`'s state until wharf_run_end.
 * `stream` is the cudaStream_t the caller will launch on (NULL = the runtime's stream; must
 * be NULL on the host backend). The session is explicit on every run (there is no implicit
 * "current" session): a container that declares states needs one; a container without
 * states accepts NULL. The session's state is allocated at its first run (unless created
 * eagerly) and initialised on `stream`; the stream waits for the session's previous run,
 * reset or fork, so a session may move between streams. The caller owns `*out` and must end
 * it with wharf_run_end; the run keeps the container, the session and their storage alive.
 * Errors: WHARF_FAILED_PRECONDITION (no active weights yet; states declared and `session`
 * NULL), WHARF_INVALID_ARGUMENT (the session does not cover this container), WHARF_BUSY
 * (the session has an open run: one run at a time per session), WHARF_OUT_OF_MEMORY.
 * Session state is initialised on `stream`, in stream order: kernels launched on it after
 * this call see it. On the host backend, where the caller's thread is the kernel, this call
 * waits for that work itself: the run's memory, session state included, is ready when it
 * returns.
 * Thread-safe. Never waits for a copy-into-inactive update; waits while an in-place update
 * writes reused storage (so a thread must not begin an in-place update while it holds an
 * open run of the same container: that update waits for the run, up to its
 * in_place_max_wait_ms). Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_run_begin(wharf_container* container, wharf_session* session,
                                                        void* stream, wharf_run** out);

/**
 * Resolves `fqn` in the run's generation, then in its session's state: a view of the
 * storage (device pointer, dtype, shape, and contiguous row-major strides, both arrays
 * valid while the run is open). Constants are WHARF_VIEW_READ_ONLY (their storage is
 * shared with other generations, containers and runs), except, in a fold callback's run,
 * derived constants and the constants the update wrote; session state is writable. In a
 * batched run (wharf_run_begin_batch) a state is the whole arena, [capacity, ...shape].
 * Errors: WHARF_NOT_FOUND. Thread-safe for concurrent calls on the same run. Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_run_get_tensor(const wharf_run* run, const char* fqn,
                                                         wharf_tensor_view* out);

/** The id of the generation this run pinned. Since 0.3. */
WHARF_API uint64_t wharf_run_generation(const wharf_run* run);

/** The stream this run's work goes on (a cudaStream_t; NULL on the host backend). Since 0.3. */
WHARF_API void* wharf_run_stream(const wharf_run* run);

/**
 * Copies `bytes` bytes of constant (or session state) `fqn`, starting at byte `offset`,
 * from the run's generation or session into host memory at `dst`, ordered on the run's
 * stream, and returns when the copy is complete. Meant for inspection and tests (it waits
 * for the stream), not for the serving path. Errors: WHARF_NOT_FOUND, WHARF_INVALID_ARGUMENT
 * (range past the constant's bytes, NULL dst), WHARF_DEVICE_ERROR. Thread-safe. Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_run_read(const wharf_run* run, const char* fqn, uint64_t offset,
                                                       void* dst, uint64_t bytes);

/**
 * Ends a run: records its completion on its stream (nothing the run could read is freed or
 * overwritten before the device gets there) and frees the handle, even on error. NULL is a
 * no-op returning NULL. Errors: WHARF_DEVICE_ERROR (recording failed; the generation is
 * then held until the container is freed). Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_run_end(wharf_run* run);

/* ======================================================================================
 * Weight store: one copy of each weight shared by every container that uses it
 *
 * Containers created with the same store (wharf_container_options.store) share storage for
 * constants whose FQN, dtype, shape and placement are equal: two methods of one model
 * (prefill, decode) cost the union of their weights, not the sum. A different declaration
 * under a shared FQN is refused; derived constants and session state are never shared.
 * Storage is refcounted: a weight lives while any container's generation or any unfinished
 * run uses it.
 *
 * wharf_container_update on one container detaches what it writes (copy-on-write: the other
 * containers keep the old storage). wharf_weight_store_update writes each FQN once and
 * stages it in every member container that declares it; wharf_weight_store_swap then
 * publishes all of them at once (a member's own wharf_container_swap refuses them).
 *
 * Threads: every function is safe to call from many threads at once.
 * ====================================================================================== */

/** Creates an empty store on `runtime` (which it keeps alive). The caller owns `*out`. Since 0.3. */
WHARF_API WHARF_NODISCARD wharf_status* wharf_weight_store_create(wharf_runtime* runtime, wharf_weight_store** out);

/** Releases the caller's reference; containers that use the store keep it alive. NULL is a no-op. Since 0.3. */
WHARF_API void wharf_weight_store_free(wharf_weight_store* store);

/** Since 0.3. */
typedef struct wharf_weight_store_stats {
  uint32_t struct_size;
  uint64_t num_unique_constants; /* live shared weights */
  uint64_t unique_bytes;     /* their bytes */
  uint64_t num_references;       /* (container, constant) pairs whose active generation uses one */
  uint64_t saved_bytes;      /* bytes that would be allocated without sharing, minus unique_bytes */
} wharf_weight_store_stats;

/** Fills `out` (the caller sets out->struct_size). Thread-safe. Since 0.3. */
WHARF_API WHARF_NODISCARD wharf_status* wharf_weight_store_get_stats(const wharf_weight_store* store,
                                                                     wharf_weight_store_stats* out);

/**
 * Writes every entry of `map` once (one allocation and one copy per FQN) and stages it in
 * the inactive generation of every member container that declares it, as that container's
 * wharf_container_update would (the fold callback of `opts`, if any, runs for each such
 * container that declares derived constants; `wait_stream` orders the reads as there).
 * Only WHARF_TARGET_INACTIVE is supported.
 * All or nothing: every check (unknown FQN: WHARF_NOT_FOUND; dtype/shape: INVALID_ARGUMENT)
 * happens before anything is copied, and a failure stages nothing anywhere. Updates
 * accumulate until wharf_weight_store_swap. `require_full` demands every FQN of the store.
 * Errors also:
 * WHARF_BUSY (a member container is being updated), WHARF_UNSUPPORTED (in-place target).
 * Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_weight_store_update(wharf_weight_store* store,
                                                                  const wharf_constant_map* map,
                                                                  const wharf_update_options* opts);

/**
 * wharf_weight_store_update from a safetensors file or a sharded checkpoint's index (a path
 * ending in ".json"), validated whole and written as one store update (see
 * wharf_container_update_from_file for the file rules and how the file is read). All or
 * nothing across the store's members: a corrupt file or shard, or one that shrinks while it
 * is read (WHARF_IO_ERROR), stages nothing anywhere. `path` and `opts` are borrowed for the call. Errors: those of
 * wharf_constant_map_load_safetensors, then wharf_weight_store_update's. Thread-safe.
 * Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_weight_store_update_from_file(wharf_weight_store* store, const char* path,
                                                                            const wharf_update_options* opts);

/**
 * Swaps every member container staged by wharf_weight_store_update, atomically with respect
 * to wharf_run_begin: no run begun after this returns sees old weights in one container and
 * new ones in another. Errors: WHARF_FAILED_PRECONDITION (nothing staged by a store update).
 * Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_weight_store_swap(wharf_weight_store* store);

/* ======================================================================================
 * Sessions: per-conversation mutable state over shared weights
 *
 * A session owns one buffer per state FQN declared by its containers (one buffer for an FQN
 * declared by several, e.g. prefill and decode). It is named explicitly on every run; one
 * run at a time per session. State memory is accounted under WHARF_MEM_STATE and is freed
 * only after the device has finished the session's last run.
 *
 * Threads: different sessions are independent (no process-wide lock); calls on one session
 * from several threads are safe, and conflicting ones (a run, a reset, a fork of it at the
 * same time) return WHARF_BUSY rather than wait.
 * ====================================================================================== */

/** Since 0.3. */
typedef struct wharf_session_options {
  uint32_t struct_size;
  /** Refuse (WHARF_RESOURCE_EXHAUSTED) a session whose state exceeds this (0 = no limit). */
  uint64_t max_state_bytes;
  /** Nonzero: allocate and initialise the state now instead of at the first run. */
  int32_t allocate_eagerly;
} wharf_session_options;

/**
 * Fills the defaults of a wharf_session_options of `struct_size` bytes and sets its
 * struct_size, writing no byte past it; see wharf_runtime_options_init_sized. Call it
 * through the macro wharf_session_options_init(&opts). Since 0.3.
 */
WHARF_API void wharf_session_options_init_sized(wharf_session_options* opts, size_t struct_size);
#define wharf_session_options_init(opts) wharf_session_options_init_sized((opts), sizeof(*(opts)))

/**
 * Creates a session serving runs of `containers` (borrowed array of `num_containers` >= 1
 * containers of `runtime`; the session keeps them alive). A state FQN declared by several
 * containers is one buffer; the declarations must agree (dtype and shape), else
 * WHARF_INVALID_ARGUMENT naming both; the first container's initial value is used. `opts`
 * may be NULL. The caller owns `*out`. Errors also: WHARF_RESOURCE_EXHAUSTED (past
 * max_state_bytes or a container's max_session_bytes), WHARF_OUT_OF_MEMORY (eager).
 * Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_session_create(wharf_runtime* runtime,
                                                             wharf_container* const* containers,
                                                             size_t num_containers,
                                                             const wharf_session_options* opts,
                                                             wharf_session** out);

/**
 * Restores every state to its initial value, stream-ordered after the session's last run
 * (on the runtime's stream; the next run waits for it). Returns without waiting for the
 * device. Errors: WHARF_BUSY (a run is open). Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_session_reset(wharf_session* session);

/**
 * Creates a session over the same containers whose state is a copy of `src`'s (branching a
 * conversation, beam search), made on the device after `src`'s last run. The caller owns
 * `*out`. Errors: WHARF_BUSY (src has an open run), WHARF_RESOURCE_EXHAUSTED,
 * WHARF_OUT_OF_MEMORY. Since 0.3.
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_session_fork(const wharf_session* src, wharf_session** out);

/** Bytes of state this session holds (or will hold at its first run). Since 0.3. */
WHARF_API uint64_t wharf_session_state_bytes(const wharf_session* session);

/**
 * Releases the caller's reference. A run still open keeps the session until wharf_run_end;
 * the state memory is returned only after the device has finished the session's last run
 * (this call may wait for it). A session of a state arena never waits: its slot goes back
 * to the arena at once, and the next session that takes the slot is ordered after this
 * one's last run on the device. NULL is a no-op. Since 0.3.
 */
WHARF_API void wharf_session_free(wharf_session* session);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* WHARF_WHARF_H */

/* ======================================================================================
 * Experimental tier (define WHARF_EXPERIMENTAL before including this header)
 *
 * Declarations here have symbol version WHARF_EXPERIMENTAL, are not in the ABI baseline,
 * and may change or go in any minor release (see "Experimental tier" at the top). New
 * surfaces (models, offloaders, CUDA graphs) start here, as do the queries below until a
 * runtime integrating Wharf has used them. Outside the include guard so that a file
 * defining WHARF_EXPERIMENTAL sees these even if wharf.h was included before.
 * ====================================================================================== */
#if defined(WHARF_EXPERIMENTAL) && !defined(WHARF_WHARF_H_EXPERIMENTAL)
#define WHARF_WHARF_H_EXPERIMENTAL

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The index of constant `fqn` in the container's declarations (what
 * wharf_container_get_constant_info and wharf_run_get_tensor_at take), or -1 when the container
 * does not declare it (or an argument is NULL). Resolve names once, then use indices on
 * the serving path. Thread-safe. Since 0.3 (experimental).
 */
WHARF_API int64_t wharf_container_find_constant(const wharf_container* container, const char* fqn);

/** The index of state `fqn` in the container's state declarations, or -1. Since 0.3 (experimental). */
WHARF_API int64_t wharf_container_find_state(const wharf_container* container, const char* fqn);

/**
 * Whether an update was staged since the last swap (1: wharf_container_swap, or the weight
 * store's swap for a store update, would publish it; 0: nothing staged, or NULL).
 * Thread-safe; the answer may be stale once another thread updates or swaps.
 * Since 0.3 (experimental).
 */
WHARF_API int32_t wharf_container_has_staged(const wharf_container* container);

/**
 * wharf_run_get_tensor for constant `index` of the container's declarations, with no name
 * lookup. Errors: WHARF_INVALID_ARGUMENT (index out of range), WHARF_FAILED_PRECONDITION
 * (in a fold over a fresh container, a constant not written yet). Thread-safe for
 * concurrent calls on the same run. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_run_get_tensor_at(const wharf_run* run, size_t index, wharf_tensor_view* out);

/**
 * wharf_run_get_tensor for state `index` of the container's state declarations, in the run's
 * session (in a batched run: the whole arena, [capacity, ...shape]). Errors: WHARF_INVALID_ARGUMENT (index out of range), WHARF_FAILED_PRECONDITION
 * (the run has no session, as a fold callback's run). Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_run_get_state_at(const wharf_run* run, size_t index, wharf_tensor_view* out);

/**
 * The session this run was begun with: `*out` is a new reference the caller owns (free it
 * with wharf_session_free), or NULL when the run has none (a container without states, or
 * a fold callback's run). A batched run has several: WHARF_FAILED_PRECONDITION.
 * Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_run_get_session(const wharf_run* run, wharf_session** out);

/* --- models: AOTInductor-compiled models executed by Wharf ---------------------------- */

/**
 * A model compiled by PyTorch's AOTInductor without libtorch (docs/aoti-compile.md says
 * how), executed by Wharf over a container it creates: the model's parameters are the
 * container's constants (by FQN), its mutated buffers (KV caches, recurrent state) are the
 * container's session state, and constants the model folds from its parameters are
 * recomputed by the model for each generation. Every container operation (updates, swaps,
 * rollback, in-place updates, weight stores, sessions, budgets) applies to it.
 * Threads: safe to use from many threads; concurrent runs execute on separate instances.
 * Since 0.3 (experimental).
 */
typedef struct wharf_model wharf_model;

/** Options of wharf_model_load. Since 0.3 (experimental). */
typedef struct wharf_model_options {
  uint32_t struct_size;
  const char* name;             /* the container's name; NULL: the file's stem */
  wharf_weight_store* store;    /* share parameters with the store's other containers; NULL: none */
  uint64_t max_session_bytes;   /* as wharf_container_options; 0 = no budget */
  const char* shim_path;        /* libwharf_aoti_shim.so; NULL: $WHARF_AOTI_SHIM, else next to libwharf */
  /* Appended: offload the layers these options select (borrowed for the call; NULL: none).
   * See wharf_model_get_offloader. */
  const struct wharf_offloader_options* offload;
  /** Progress and cancellation of loading the weights (wharf_progress_fn); NULL = none. */
  wharf_progress_fn progress;
  void* progress_user;
  /** As wharf_container_options.session_capacity: > 0 keeps the model's states (its mutated
   *  buffers) for up to this many sessions in one state arena. Appended. */
  uint32_t session_capacity;
} wharf_model_options;

/** Fills the defaults (all zero/NULL) up to `struct_size`. Since 0.3 (experimental). */
WHARF_API void wharf_model_options_init_sized(wharf_model_options* opts, size_t struct_size);
#define wharf_model_options_init(opts) wharf_model_options_init_sized((opts), sizeof(*(opts)))

/**
 * Loads the compiled model at `so_path` on `runtime` (a CUDA runtime) with `weights` (borrowed
 * for the call). `so_path` is a file path (a relative one from the working directory; the
 * dynamic loader's search path is not used): the model's `.so`, or a `.pt2` package written by
 * aoti_compile_and_package, whose model library is read into an anonymous memory file (no
 * temporary file; the model named "model" when the package holds several; the package's own
 * weights are not read). Each load gets the code of the file its path names now: a `.so`
 * replaced by rename is loaded anew beside the old one, and every package is a library of its
 * own; two loads of one unchanged `.so` share its loaded code. Every parameter the model
 * declares must be in `weights` by original FQN with the model's dtype and byte size (its
 * shape is taken from there); a mutated buffer found in `weights` gives the state's shape and
 * initial value (absent: a 1-D zero state of the buffer's size). The weights are copied in and
 * made active: the model is ready to run. The first load in a process opens
 * libwharf_aoti_shim.so with global symbol scope (compiled models import its aoti_torch_*
 * functions). The caller owns `*out`. Errors: WHARF_UNSUPPORTED (host backend; the shim
 * library missing; the process already provides aoti_torch_* from libtorch; a shim function
 * the model needs that Wharf lacks, named; a compressed package entry), WHARF_DATA_CORRUPT (a
 * malformed package, naming the entry), WHARF_INVALID_ARGUMENT (not an AOTInductor model; a
 * package with no single model library; a weight of the wrong dtype or size, named),
 * WHARF_NOT_FOUND (a parameter missing from `weights`, named; a missing file), WHARF_IO_ERROR
 * (a path that is not a regular file, e.g. a FIFO or a directory, refused at once without
 * waiting on it; a file that cannot be opened), WHARF_OUT_OF_MEMORY. Nothing is left behind on
 * error. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_model_load(wharf_runtime* runtime, const char* so_path,
                                                         const wharf_constant_map* weights,
                                                         const wharf_model_options* opts, wharf_model** out);

/** Releases the caller's reference; open runs keep what they use. NULL is a no-op. Since 0.3 (experimental). */
WHARF_API void wharf_model_free(wharf_model* model);

/**
 * The model's container (borrowed: valid while the model lives; do not free it). Update,
 * swap, create sessions and begin runs through it. Since 0.3 (experimental).
 */
WHARF_API wharf_container* wharf_model_container(wharf_model* model);

/** Number of inputs of the model's forward (0 for NULL). Since 0.3 (experimental). */
WHARF_API size_t wharf_model_num_inputs(const wharf_model* model);

/** Number of outputs of the model's forward (0 for NULL). Since 0.3 (experimental). */
WHARF_API size_t wharf_model_num_outputs(const wharf_model* model);

/**
 * Name of input `i` (owned by the model), or NULL past the end: a package method's name from
 * its manifest (AOTInductor may give the compiled inputs placeholder names such as
 * "arg27_1"), else the compiled forward's. Since 0.3 (experimental).
 */
WHARF_API const char* wharf_model_input_name(const wharf_model* model, size_t i);

/**
 * Runs the model for `run` (a run of wharf_model_container(model), begun with the session
 * whose state the model reads and writes) on the run's stream, returning when the work is
 * enqueued. `inputs` (borrowed for the call) are the forward's inputs in order: device
 * memory of the runtime's device, or host memory, which Wharf copies to device memory on
 * the run's stream (the caller may reuse it when the call returns). `outputs` (an array of
 * `num_outputs` views the caller provides; set each struct_size or zero them) receive
 * device tensors the run owns: valid until wharf_run_end, freed stream-ordered after it.
 * A method compiled over the whole state arena (a model package's batched method, with
 * session_capacity; experimental, see "State arenas and batched runs") binds every state as
 * the arena and runs a batched run (wharf_run_begin_batch over N sessions) or a run of one
 * arena session (N = 1) alike; its instances do not depend on the sessions (a run over other
 * sessions rebinds nothing). Its input "slots" must be an empty view (data NULL: Wharf
 * passes the run's slot indices) or the run's own wharf_run_get_slot_indices tensor (the
 * same data pointer); the other inputs are the caller's rows in the order of the run's
 * sessions. Wharf checks what the manifest lets it check generically: every input dimension
 * the manifest names with the slots input's symbolic dimension (input_ids [N, 1],
 * cache_position [N]) must be the run's number of sessions; the values (token ids,
 * positions) are the caller's. Other models refuse a batched run (WHARF_UNSUPPORTED, naming
 * the model).
 * Errors: WHARF_INVALID_ARGUMENT (the run is of another container, wrong input count,
 * unsupported dtype; a slots input that is not the run's, or a batch dimension other than the
 * run's N, naming the input), WHARF_UNSUPPORTED (a batched run of a model compiled over one
 * session's state), WHARF_INTERNAL (the model failed; the message says why).
 * Thread-safe. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_model_run(wharf_model* model, wharf_run* run,
                                                        const wharf_tensor_view* inputs, size_t num_inputs,
                                                        wharf_tensor_view* outputs, size_t num_outputs);

/**
 * Copies `bytes` bytes from `src` to `dst` (each host memory or device memory of the run's
 * runtime), ordered on the run's stream after the work enqueued on it so far, and returns
 * when the copy is complete. For services without a CUDA runtime of their own (Go, Rust,
 * Java) to read a model's outputs; model inputs may simply be host memory (see
 * wharf_model_run). Errors: WHARF_INVALID_ARGUMENT (NULL pointers with bytes > 0),
 * WHARF_DEVICE_ERROR. Thread-safe. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_run_copy(const wharf_run* run, void* dst, const void* src, uint64_t bytes);

/* --- CUDA graphs of a model's runs -------------------------------------------------------- */

/** Options of wharf_model_enable_graphs. Since 0.3 (experimental). */
typedef struct wharf_graph_options {
  uint32_t struct_size;
  /* Distinct input shapes (buckets) that get a graph, each captured at the first run of that
   * shape; runs of further shapes execute eagerly. 0: 8. */
  uint32_t max_buckets;
  /* Ceiling of each graph pool in bytes (0: none): a capture that would pass it fails and its
   * shape runs eagerly. */
  uint64_t max_pool_bytes;
  /* Runs that may replay at the same time: each open run that replayed holds a set of graphs
   * (a pool and a graph per bucket, captured when a concurrent run first needs it) until it
   * ends; a run finding every set held executes eagerly. 0: 4. */
  uint32_t max_concurrent_runs;
  /* Appended: buckets of a symbolic dimension (a model package method's manifest `dims`:
   * a batched method's session dimension, decode_batch's "N", or one the manifest marks
   * "pad": "repeat", the exporter's prefill "T"); see wharf_model_enable_graphs. `bucket_dim`
   * names it (NULL: the method's only dimension that may be padded); `bucket_sizes` (borrowed
   * for the call; any order, distinct, each in 1 .. the dimension's max) are the sizes a
   * graph is captured for; `num_bucket_sizes` 0: the default set, powers of two up to the
   * dimension's max and the max itself (decode_batch N in 1..8: 1, 2, 4, 8), when the method
   * has exactly one session dimension with a max (else exact shapes: a prefill's T gets
   * buckets only when sizes are given). `exact_shapes` nonzero: no padding, a graph per exact
   * input shape (the other three must be unset). Since 0.3 (experimental). */
  const char* bucket_dim;
  const int64_t* bucket_sizes;
  uint32_t num_bucket_sizes;
  uint32_t exact_shapes;
} wharf_graph_options;

/** Fills the defaults (all zero) up to `struct_size`. Since 0.3 (experimental). */
WHARF_API void wharf_graph_options_init_sized(wharf_graph_options* opts, size_t struct_size);
#define wharf_graph_options_init(opts) wharf_graph_options_init_sized((opts), sizeof(*(opts)))

/**
 * Makes the model's runs replay CUDA graphs (docs/decisions.md, "CUDA graphs"). From this
 * call on, wharf_model_run captures a graph the first time it sees a shape of the inputs
 * (with buckets: a bucket size, below)
 * (dtypes and shapes; a warm-up run and the capture happen inside that call, on a private
 * stream, against scratch state, or for a method over the whole state arena against the
 * arena with the run's rows kept aside and put back: the session's state is written once,
 * by the replay) and
 * replays it for every later run of that shape: the inputs are copied into the graph's static
 * buffers and one graph launch does the rest on the run's stream. A replay reads exactly the
 * run's generation and session, as an eager run does: after a swap, a rollback, an update
 * (in place or not) or for another session, the graph's pointers to constants, state and
 * folded constants are re-pointed (only the nodes whose binding changed), never recaptured;
 * the constants a model folds are folded once per generation. An update (or weight store or
 * replica group update) that stages a generation prepares the graphs for it before it
 * returns, on the calling thread: it folds that generation's constants and points a spare
 * graph of each bucket at it, so the first replay after the swap does neither (a run begun
 * before the swap replays the other graph, still on its generation); a preparation that
 * fails changes nothing (the first replay folds and re-points, counted in
 * wharf_graph_stats). Outputs of a replayed run are the graph's static buffers: valid
 * until wharf_run_end, like every model output; until then the set of graphs that call
 * used is held by the run: other calls meanwhile (other runs, or the same run again) replay
 * from other sets, up to max_concurrent_runs, each set captured at its first use, and a
 * call finding every set held executes eagerly.
 * A model with offloaded layers (wharf_model_options.offload) is captured with its offloader
 * active: the layers' copies are graph nodes re-pointed, like constants, to the host storage
 * of each replay's own run's generation, into a ring of slots each set of graphs has of its
 * own (WHARF_MEM_OFFLOAD, the size of the offloader's pool), so a replay takes nothing of the
 * offloader's. A capture needs the offloader: while another run holds it the call executes
 * eagerly (WHARF_BUSY, as without graphs) and a later call captures.
 * Buckets (a model package's method whose inputs share a symbolic dimension; opts'
 * bucket_* fields or the default set): a run of size n along it replays the graph of the
 * smallest bucket b >= n. Every input with the dimension is padded to b by repeating its
 * last entry along it (the last token, position, slot); every output with it is a view of
 * its first n entries there (the view's strides are the bucket's); an output without it
 * (prefill's last-position logits) is the padded run's, which equals the real last row's.
 * The rule a method must satisfy to be padded: each row writes only at places keyed by its
 * own entries (its position, its slot), and rows are independent apart from what they read
 * through those writes (attention up to the row's own position, in its own slot): a
 * repeated last row then writes the same values to the same places and attends as the real
 * last row, so the real rows, their outputs and the session's state equal an unpadded run's
 * (bit for bit where the kernels compute a row alike whatever the row count). Padded are a
 * batched method's session dimension (the `slots` input's, whose rows are sessions; the
 * exporter's decode_batch) and a dimension the package's manifest marks "pad": "repeat"
 * (the exporter's prefill T: each row's attention mask is at its own cache_position, and the
 * exporter checks the padded prefill against the unpadded one). Buckets on any other
 * dimension are refused: a prefill exported before that mark (its rows' masks followed
 * their place in the chunk; padded, its last row's logits changed) must be re-exported to
 * be padded, and gets a graph per exact length until then. The largest bucket is captured first (at the
 * first run needing any bucket; the smaller ones reuse its pool memory); a size past the
 * largest bucket runs eagerly, the reason in the stats. max_buckets bounds graphs of exact
 * shapes only (runs whose inputs lack the dimension), not declared buckets.
 * Whatever cannot be captured or re-pointed runs eagerly and says why in
 * wharf_model_get_graph_stats (a failed capture is not retried for its shape; nothing
 * half-captured is used). `opts` may be NULL (defaults;
 * borrowed for the call). Errors: WHARF_UNSUPPORTED (a model or shim library without the
 * entry points capture needs, a CUDA driver older than 12.4, named),
 * WHARF_FAILED_PRECONDITION (graphs already enabled), WHARF_INVALID_ARGUMENT (NULL
 * model, nonzero bytes the library does not know in `opts`; a bucket_dim the model does not
 * declare or that an input names twice, a size < 1, past the dimension's max or given twice,
 * sizes without bucket_dim for a model with no or several paddable dimensions, bucket sizes
 * with exact_shapes, sizes NULL with num_bucket_sizes > 0; each named), WHARF_UNSUPPORTED
 * (a bucket_dim that is neither a batched method's session dimension nor marked "pad":
 * "repeat", saying why: for an old package's prefill, to re-export it). Thread-safe. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_model_enable_graphs(wharf_model* model, const wharf_graph_options* opts);

/** Statistics of a model's CUDA graphs (wharf_model_get_graph_stats). Since 0.3 (experimental). */
typedef struct wharf_graph_stats {
  uint32_t struct_size;
  uint32_t num_buckets;      /* graphs held, one per input shape per concurrent set */
  uint64_t captures;         /* graphs captured */
  uint64_t capture_failures; /* shapes whose capture failed (they run eagerly) */
  uint64_t replays;          /* runs served by a graph */
  uint64_t repoints;         /* replays that re-pointed nodes (their binding differed; not those an
                              * update had pointed already: prepointed_replays) */
  uint64_t nodes_repointed;  /* node parameter updates by replays, in total */
  uint64_t eager_runs;       /* runs executed eagerly while graphs were enabled */
  uint64_t folds;            /* generations whose constants were folded for the graphs (by captures,
                              * replays and updates: replay_folds, prepare_folds) */
  uint64_t pool_bytes;       /* the graph pool: static inputs, outputs, intermediates (memory tag "graph") */
  uint64_t folded_bytes;     /* folded constants held for live generations (memory tag "constants") */
  /* Host time in total, nanoseconds: binding replays that re-pointed nodes (the run's bases and
   * the set-params calls), binding replays that did not (the bases compared), folding the
   * constants of new generations in replays (on the serving path). */
  uint64_t repoint_ns;
  uint64_t bind_check_ns;
  uint64_t fold_ns;
  char last_eager_reason[256]; /* why the last eager run was not replayed ("" if none; truncated) */
  /* Appended: replays whose inputs were padded to a larger bucket; the bucket dimension
   * ("" for exact shapes; truncated) and its number of sizes. */
  uint64_t padded_replays;
  char bucket_dim[64];
  uint32_t num_bucket_sizes;
  /* Appended: host time of replays in total, nanoseconds, by phase (their binding is in
   * repoint_ns and bind_check_ns), for a breakdown of wharf_model_run's host time per replay
   * (divide by replays): choosing the graph (the lock, the check that the caller is not
   * capturing the stream, the bucket, the set and the graph; replays that captured a graph
   * are left out), ordering after the set's previous run (an event query, or a wait), the
   * inputs (host inputs packed and copied, the gather's parameters), cudaGraphLaunch, handing
   * out the outputs, and releasing the set when the run ends (in wharf_run_end). */
  uint64_t select_ns;
  uint64_t wait_ns;
  uint64_t inputs_ns;
  uint64_t launch_ns;
  uint64_t outputs_ns;
  uint64_t release_ns;
  /* Appended: preparing for swaps. An update (or weight store update) that stages a
   * generation folds its constants for the graphs and points a spare graph of each bucket at
   * it, on the updater's thread, before it returns, so the first replay after the swap needs
   * neither. Folds done by replays (on the serving path: a generation no update prepared) and
   * by updates; replays that found their graph pointed at their binding by an update (no node
   * set); generations prepared for; preparations that failed (the first replay then folds and
   * re-points; nothing else changes); host time of the preparations in total, nanoseconds
   * (on the updaters' threads, part of their update calls). */
  uint64_t replay_folds;
  uint64_t prepare_folds;
  uint64_t prepointed_replays;
  uint64_t prepares;
  uint64_t prepare_failures;
  uint64_t prepare_ns;
} wharf_graph_stats;

/**
 * Fills `out` (the caller sets out->struct_size). Errors: WHARF_FAILED_PRECONDITION (graphs
 * not enabled), WHARF_INVALID_ARGUMENT (NULL). Thread-safe. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_model_get_graph_stats(const wharf_model* model, wharf_graph_stats* out);

/** One captured graph (wharf_model_get_graph_bucket). Since 0.3 (experimental). */
typedef struct wharf_graph_bucket_info {
  uint32_t struct_size;
  uint32_t set;            /* its concurrent set (0 .. max_concurrent_runs - 1) */
  uint64_t pool_bytes;     /* pool memory its capture added (memory tag "graph") */
  uint64_t nodes;          /* nodes of the graph */
  uint64_t patched_nodes;  /* nodes with a parameter pointing at constants, state or folded constants */
  uint64_t patches;        /* such parameter words */
  double capture_ms;       /* fold, warm-up, capture and instantiation, milliseconds */
  char shapes[128];        /* the inputs' dtypes and shapes, e.g. "I64[1, 1], I64[1]" (truncated) */
  int64_t bucket_size;     /* Appended: its size along the bucket dimension (-1: an exact shape) */
  /* Appended: capture_ms in parts, milliseconds: the instance, binding and fold; the static
   * inputs and the warm-up run; the captured run; reading the nodes and building the patch
   * plan; instantiation. */
  double bind_fold_ms;
  double warmup_ms;
  double capture_run_ms;
  double scan_ms;
  double instantiate_ms;
} wharf_graph_bucket_info;

/**
 * Fills `out` (the caller sets out->struct_size) with graph `index` of the model, in capture
 * order (0 .. wharf_graph_stats.num_buckets - 1). Errors: WHARF_FAILED_PRECONDITION (graphs
 * not enabled), WHARF_INVALID_ARGUMENT (NULL, `index` past the last graph). Thread-safe.
 * Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_model_get_graph_bucket(const wharf_model* model, uint32_t index,
                                                                     wharf_graph_bucket_info* out);

/* --- model packages: an exported model loaded in one call ------------------------------ */

/**
 * A Wharf model package (docs/model-package.md): a directory with a manifest.json, the
 * compiled methods (prefill, decode, ...), the weights as safetensors keyed by the
 * checkpoint's FQNs, and the per-conversation state's declarations. Loaded, it is one weight
 * store holding the weights once and one model per method over it (container
 * "<name>/<method>"); sessions it creates cover every method, so prefill and decode share the
 * KV state. Immutable once loaded. Threads: every function is safe to call from many threads
 * at once. Since 0.3 (experimental).
 */
typedef struct wharf_model_package wharf_model_package;

/** Options of wharf_model_package_load. Since 0.3 (experimental). */
typedef struct wharf_model_package_options {
  uint32_t struct_size;
  const char* shim_path;        /* libwharf_aoti_shim.so; NULL: $WHARF_AOTI_SHIM, else next to libwharf */
  uint64_t max_session_bytes;   /* each method's container's session budget; 0 = none */
  /** Progress and cancellation of loading the weights, all methods as one total (the bytes
   *  of the manifest's parameters); NULL = none. */
  wharf_progress_fn progress;
  void* progress_user;
  /** > 0: one state arena for up to this many sessions holds the manifest's states, shared
   *  by every method (a session of the package takes one slot); see "State arenas and
   *  batched runs". 0: per-session buffers. A batched method (manifest session_capacity S)
   *  is loaded when this is S; with 0 the package loads without it (listed; its
   *  wharf_model_package_get_method answers WHARF_FAILED_PRECONDITION); any other value
   *  refuses the load (WHARF_INVALID_ARGUMENT). Appended. */
  uint32_t session_capacity;
} wharf_model_package_options;

/** Fills the defaults (all zero/NULL) up to `struct_size`. Since 0.3 (experimental). */
WHARF_API void wharf_model_package_options_init_sized(wharf_model_package_options* opts, size_t struct_size);
#define wharf_model_package_options_init(opts) wharf_model_package_options_init_sized((opts), sizeof(*(opts)))

/**
 * Loads the model package in directory `dir` on `runtime` (a CUDA runtime) in one call.
 * First, without touching the device: the manifest is read and checked whole (required
 * fields and their types, dtypes, shapes, symbolic dimensions, unique names, format_version),
 * every file it names must exist inside the package (no absolute path, no "..", no symbolic
 * link leading out of it), and every weight file's header must hold exactly the manifest's
 * parameters (each once, with its dtype and shape), and the state file the initial values
 * the manifest names. Then the weights are read once (pread, from the files) into a new
 * weight store, and every method is loaded as a model over it with the manifest's state
 * declarations; each compiled method's input and output counts, parameters and buffers must
 * agree with the manifest. `dir` and `opts` (NULL: defaults) are borrowed for the call. The
 * caller owns `*out`. Every refusal names the package, the file and the field at fault
 * ("manifest.json: methods[1].inputs[0].dtype: 'int65' is not a dtype"). Errors:
 * WHARF_NOT_FOUND (no such directory, no manifest.json, a file the manifest names is
 * missing, an initial value's tensor missing from the state file), WHARF_INVALID_ARGUMENT
 * (not a directory; the manifest not JSON, a required field missing or of the wrong type, a
 * bad dtype or shape, a duplicate name, a path leaving the package; a weight file tensor the
 * manifest does not list, a listed parameter in no weight file, a tensor whose dtype or shape
 * differs; a method whose compiled inputs/outputs differ in number from the manifest's, that
 * binds a parameter the manifest does not list or a buffer it does not declare, a parameter
 * or state no method uses; a batched method whose session_capacity differs from a nonzero
 * opts->session_capacity, naming both), WHARF_UNSUPPORTED (format_version newer than this library reads;
 * the host backend; a shim function a method needs that Wharf lacks, named), WHARF_DATA_CORRUPT
 * (a corrupt weight or state file), WHARF_IO_ERROR, WHARF_OUT_OF_MEMORY, WHARF_CANCELLED (by
 * the progress callback), and wharf_model_load's. Nothing is left behind on error.
 * Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_model_package_load(wharf_runtime* runtime, const char* dir,
                                                                 const wharf_model_package_options* opts,
                                                                 wharf_model_package** out);

/**
 * Releases the caller's reference. Models (wharf_model_package_get_method), sessions and
 * runs taken from the package keep what they use alive. NULL is a no-op.
 * Since 0.3 (experimental).
 */
WHARF_API void wharf_model_package_free(wharf_model_package* package);

/** The manifest's "name" (owned by the package), or NULL for NULL. Since 0.3 (experimental). */
WHARF_API const char* wharf_model_package_name(const wharf_model_package* package);

/**
 * The manifest's "max_seq_len" (the KV cache's capacity: positions 0 .. max_seq_len - 1), or 0
 * when the manifest gives none (or NULL). Since 0.3 (experimental).
 */
WHARF_API uint64_t wharf_model_package_max_seq_len(const wharf_model_package* package);

/**
 * The package's weight store (borrowed: valid while the package lives; do not free it). Its
 * updates reach every method: wharf_weight_store_update or _update_from_file (a new
 * checkpoint, or some of its tensors, by the checkpoint's FQNs; a tied weight also by the
 * other name the manifest's weights.aliases gives it) then wharf_weight_store_swap.
 * Since 0.3 (experimental).
 */
WHARF_API wharf_weight_store* wharf_model_package_store(wharf_model_package* package);

/** Number of methods (0 for NULL). Since 0.3 (experimental). */
WHARF_API size_t wharf_model_package_num_methods(const wharf_model_package* package);

/** Name of method `i` in the manifest's order (owned by the package), or NULL past the end. Since 0.3 (experimental). */
WHARF_API const char* wharf_model_package_method_name(const wharf_model_package* package, size_t i);

/** The index of method `name`, or -1 (none, or an argument is NULL). Since 0.3 (experimental). */
WHARF_API int64_t wharf_model_package_find_method(const wharf_model_package* package, const char* name);

/**
 * The model of method `name` (run it with wharf_model_run on runs of its container). `*out`
 * is a new reference the caller owns and frees with wharf_model_free; it stays valid after
 * the package is freed. Errors: WHARF_NOT_FOUND (no such method; the message lists the
 * package's), WHARF_FAILED_PRECONDITION (a batched method of a package loaded without a
 * session_capacity; the message names the capacity it needs), WHARF_INVALID_ARGUMENT (NULL
 * arguments). Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_model_package_get_method(wharf_model_package* package,
                                                                       const char* name, wharf_model** out);

/**
 * Creates a session over every method's container (as wharf_session_create over them): one
 * buffer per declared state, shared by all methods, so a conversation's prefill and decode
 * runs read and write the same KV cache. `opts` may be NULL. The caller owns `*out`. Errors:
 * those of wharf_session_create. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_model_package_create_session(wharf_model_package* package,
                                                                           const wharf_session_options* opts,
                                                                           wharf_session** out);

/**
 * One input or output of a method as the manifest declares it. Every pointer is owned by the
 * package (valid while it lives). A symbolic dimension (a sequence length) has shape -1, its
 * name in dim_names and its range in dim_min/dim_max (dim_max -1: no bound given); a fixed one
 * has its size in all three and a NULL name. Since 0.3 (experimental).
 */
typedef struct wharf_model_package_tensor_info {
  uint32_t struct_size;
  const char* name;
  wharf_dtype dtype;
  int32_t ndim;
  const int64_t* shape;         /* ndim sizes, -1 where symbolic */
  const char* const* dim_names; /* ndim entries: a symbolic dimension's name, NULL where fixed */
  const int64_t* dim_min;       /* ndim entries: the smallest size */
  const int64_t* dim_max;       /* ndim entries: the largest size, -1 when unbounded */
} wharf_model_package_tensor_info;

/** Number of inputs of method `method` (an index) in the manifest, 0 past the end. Since 0.3 (experimental). */
WHARF_API size_t wharf_model_package_num_method_inputs(const wharf_model_package* package, size_t method);

/** Number of outputs of method `method` in the manifest, 0 past the end. Since 0.3 (experimental). */
WHARF_API size_t wharf_model_package_num_method_outputs(const wharf_model_package* package, size_t method);

/**
 * Fills `out` (the caller sets out->struct_size) with input `i` of method `method`, in the
 * compiled forward's order. Errors: WHARF_INVALID_ARGUMENT (an index out of range, NULL
 * arguments). Thread-safe. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_model_package_get_method_input(const wharf_model_package* package,
                                                                             size_t method, size_t i,
                                                                             wharf_model_package_tensor_info* out);

/** As wharf_model_package_get_method_input, for output `i`. Since 0.3 (experimental). */
WHARF_API WHARF_NODISCARD wharf_status* wharf_model_package_get_method_output(const wharf_model_package* package,
                                                                              size_t method, size_t i,
                                                                              wharf_model_package_tensor_info* out);

/* --- offloaders: layer weights in pinned host memory, prefetched into device slots ----- */

/**
 * Keeps chosen layers' constants of a container in pinned host memory and a small pool of
 * static device slots, and, within a run, copies layer i + prefetch_step into a slot on a
 * copy stream of its own while layer i computes: events order everything, the host never
 * waits, and the same calls work while the run's stream is captured into a CUDA graph (the
 * copy stream forks from the capture and joins back into it).
 *
 * Layers. `layer_pattern` ("layers.{layer}." by default) gives each constant whose FQN
 * contains it, with {layer} a decimal number, that layer number. The offloader spans layers
 * 0 .. wharf_offloader_num_layers()-1. Offloaded constants must be declared with
 * WHARF_PLACEMENT_HOST: every generation's storage for them is pinned host memory (an update
 * writes them with host copies only). The k-th offloaded layer (in layer order) uses slot
 * k % slot_capacity; the pool (slot_capacity slots of the largest offloaded layer's bytes) is
 * allocated once, under WHARF_MEM_OFFLOAD, and its addresses never change.
 *
 * Per run, in this order: wharf_run_begin_offload (copies the first prefetch_step offloaded
 * layers); for each layer L in increasing order, wharf_run_wait_offload(L) (the run's stream
 * waits for L's copy; the views are L's slots), launch L's kernels on the run's stream,
 * wharf_run_mark_offload_issued(L) (the slot may be refilled once the stream passes this point);
 * then wharf_run_end_offload, before wharf_run_end. Layers that are not offloaded may be
 * skipped or passed (their calls do nothing; read their constants from the run's table).
 * One run at a time holds an offloader (its slots hold that run's layers): others get
 * WHARF_BUSY until it ends. Runs of other streams are ordered after the previous run on the
 * device; a run being captured cannot wait for work outside its capture, so launch the graph
 * on a stream ordered after the previous run (the same stream, or wait for it), and begin the
 * runs after a launch on a stream ordered after it: a captured run is no previous run for
 * the offloader (the run after it waits for the run before the capture).
 *
 * Generations. A run copies from the host storage of the generation it pinned: an update and
 * a swap make later runs prefetch the new weights, and a run in flight never reads a mix. A
 * graph captured over a run replays copies from that run's generation; the offloader keeps
 * every generation it captured alive until it is freed (recapture to follow a swap), and an
 * in-place update (WHARF_TARGET_ACTIVE_IN_PLACE) of that generation's offloaded constants
 * gives them fresh storage rather than overwrite what such a graph copies. (A compiled
 * model's own graphs, wharf_model_enable_graphs, follow swaps without recapture.)
 *
 * Threads: all functions are safe to call from many threads; the run's calls are ordered as
 * the run's own work is. The offloader keeps its container alive.
 * Since 0.3 (experimental).
 */
typedef struct wharf_offloader wharf_offloader;

/** Options of wharf_offloader_create. Since 0.3 (experimental). */
typedef struct wharf_offloader_options {
  uint32_t struct_size;
  const char* const* fqns;     /* explicit list of offloaded constants (borrowed for the call); NULL: select by layer */
  size_t num_fqns;
  const char* layer_pattern;   /* NULL: "layers.{layer}." */
  uint32_t group_size;         /* vLLM's selection: layer L is offloaded when L % group_size >= */
  uint32_t num_in_group;       /*   group_size - num_in_group; group_size 0 (default): every layer */
  uint32_t prefetch_step;      /* layers copied ahead; default 1; 0: each copy is issued at its wait */
  uint32_t slot_capacity;      /* device slots; 0 (default): max(prefetch_step, 1); at most the offloaded layers */
  /* Budget check (appended; see wharf_offloader_get_budget). */
  uint64_t step_compute_us;      /* the step's measured compute time, microseconds; 0 (default): unknown, no check */
  uint64_t h2d_bytes_per_second; /* 0 (default): measured at creation (CUDA), 12 GB/s assumed (host backend) */
  int32_t refuse_if_exposed;     /* non-zero: creation fails when prefetch cannot hide the copies; 0: logs a warning */
} wharf_offloader_options;

/** Fills the defaults (prefetch_step 1, num_in_group 1, the rest zero/NULL) up to `struct_size`. Since 0.3 (experimental). */
WHARF_API void wharf_offloader_options_init_sized(wharf_offloader_options* opts, size_t struct_size);
#define wharf_offloader_options_init(opts) wharf_offloader_options_init_sized((opts), sizeof(*(opts)))

/**
 * Creates an offloader over `container` (which it keeps alive); `opts` is borrowed for the
 * call, NULL means defaults. Allocates the slot pool, a copy stream and its events. The
 * caller owns `*out` (free with wharf_offloader_free). Errors: WHARF_INVALID_ARGUMENT (a
 * pattern without exactly one {layer}, no constant matching it, a listed constant without a
 * layer number, num_in_group outside 1..group_size, prefetch_step above slot_capacity: the
 * message says which), WHARF_NOT_FOUND (a listed FQN the container does not declare),
 * WHARF_ALREADY_EXISTS (an FQN listed twice), WHARF_FAILED_PRECONDITION (an offloaded
 * constant not declared WHARF_PLACEMENT_HOST, named), WHARF_OUT_OF_MEMORY (the pool),
 * WHARF_RESOURCE_EXHAUSTED (refuse_if_exposed set and the copies a step needs take longer
 * than step_compute_us at the H2D bandwidth: the message gives bytes, times and the excess),
 * WHARF_DEVICE_ERROR (measuring the bandwidth). Thread-safe. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_offloader_create(wharf_container* container, const wharf_offloader_options* opts, wharf_offloader** out);

/**
 * Releases the caller's reference. A run that began offloading keeps the offloader until it
 * ends; the last reference waits for the copy stream, then frees the pool. NULL is a no-op.
 * Since 0.3 (experimental).
 */
WHARF_API void wharf_offloader_free(wharf_offloader* offloader);

/** Where an offloader budget's H2D bandwidth comes from. Since 0.3 (experimental). */
typedef enum wharf_h2d_source {
  WHARF_H2D_GIVEN = 0,    /* the h2d_bytes_per_second option */
  WHARF_H2D_MEASURED = 1, /* a timed pinned->device copy on the copy stream at creation (best of 3) */
  WHARF_H2D_ASSUMED = 2   /* host backend: 12 GB/s, what PCIe 3.0 x16 gives pinned copies */
} wharf_h2d_source;

/**
 * An offloader's budget: what a step (a run through every layer) copies against its compute.
 * Since 0.3 (experimental).
 */
typedef struct wharf_offloader_budget {
  uint32_t struct_size;           /* set by the caller to sizeof; written up to it */
  uint32_t num_offloaded_layers;
  uint64_t bytes_per_step;        /* the offloaded constants' bytes, every offloaded layer once */
  uint64_t h2d_bytes_per_second;
  int32_t h2d_source;             /* a wharf_h2d_source */
  double copy_us;                 /* bytes_per_step at h2d_bytes_per_second */
  double compute_us;              /* step_compute_us as given; 0: unknown (no check) */
  double exposed_us;              /* copy_us - compute_us when positive: what prefetch cannot hide; else 0 */
} wharf_offloader_budget;

/**
 * The budget estimated when the offloader was created (fixed for its life). Prefetch
 * overlaps copies with compute, so a step takes at least max(compute_us, copy_us);
 * exposed_us is that bound's excess over the compute time (the first prefetch_step copies
 * of a run start with it, so the real excess may be larger). At creation an exposed budget
 * is logged at WHARF_LOG_WARN with these figures, or refused with refuse_if_exposed
 * (WHARF_RESOURCE_EXHAUSTED); with step_compute_us 0 nothing is checked. `out->struct_size`
 * must be set. Errors: WHARF_INVALID_ARGUMENT (NULL, a struct_size below 4 or cutting a
 * field). Thread-safe. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_offloader_get_budget(const wharf_offloader* offloader, wharf_offloader_budget* out);

/** Number of layers the offloader spans (the largest layer number + 1); 0 for NULL. Since 0.3 (experimental). */
WHARF_API uint32_t wharf_offloader_num_layers(const wharf_offloader* offloader);

/** Number of offloaded constants of `layer` (0: not offloaded, out of range, or NULL). Since 0.3 (experimental). */
WHARF_API size_t wharf_offloader_num_layer_constants(const wharf_offloader* offloader, uint32_t layer);

/**
 * The FQN of offloaded constant `i` of `layer` (declaration order; owned by the container),
 * the i-th view wharf_run_wait_offload fills; NULL past the end. Since 0.3 (experimental).
 */
WHARF_API const char* wharf_offloader_layer_constant(const wharf_offloader* offloader, uint32_t layer, size_t i);

/**
 * The offloader of a model loaded with wharf_model_options.offload: a new reference in
 * `*out` (free it with wharf_offloader_free; the model keeps its own), or NULL for a model
 * loaded without. Loading with offload places the selected layers' parameters in pinned
 * host memory and binds the compiled model's constants of those layers to the offloader's
 * slots (fixed addresses); the model itself passes its offload points (the custom ops
 * wharf::offload_wait / wharf::offload_issued at its layer boundaries, mapped to Wharf's C
 * shims when it is compiled: tools/aoti/compile_offload_model.py), and each
 * wharf_model_run begins and ends offloading in the run around the model, so do not call
 * wharf_run_*_offload for it; one run at a time offloads (a concurrent wharf_model_run of
 * the model gets WHARF_BUSY until that run ends). A model that reaches fewer offload points
 * than it has offloaded layers fails its run with WHARF_FAILED_PRECONDITION; a model with run-time
 * constant folding cannot be offloaded (wharf_model_load: WHARF_UNSUPPORTED). Updates and
 * swaps of the model's container change what later runs copy into the slots, as for any
 * offloader. Use it for wharf_offloader_get_budget and the layer queries. Errors:
 * WHARF_INVALID_ARGUMENT (NULL). Thread-safe. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_model_get_offloader(wharf_model* model, wharf_offloader** out);

/**
 * Begins offloading in `run` (a run of the offloader's container): the copy stream forks
 * from the run's stream and the first prefetch_step offloaded layers are copied from the
 * run's generation. Returns without waiting for the device. Errors: WHARF_INVALID_ARGUMENT
 * (a run of another container), WHARF_BUSY (another open run holds the offloader),
 * WHARF_FAILED_PRECONDITION (this run already began; a fold callback's run),
 * WHARF_DEVICE_ERROR. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_run_begin_offload(wharf_run* run, wharf_offloader* offloader);

/**
 * Makes the run's stream wait (on the device) for `layer`'s copy and fills `views[i]` for
 * each of its wharf_offloader_num_layer_constants() constants (device memory of the slot, valid until
 * wharf_run_mark_offload_issued for this layer; set each struct_size or zero the views). `views`
 * may be NULL with `num_views` 0 to wait only. A layer that is not offloaded fills nothing.
 * Calling it again for the same layer before issued returns the same views. Errors:
 * WHARF_INVALID_ARGUMENT (layer out of range, `num_views` below the layer's size),
 * WHARF_FAILED_PRECONDITION (offloading not begun in this run; a layer out of order, or
 * the previous offloaded layer not marked issued, named), WHARF_DEVICE_ERROR.
 * Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_run_wait_offload(wharf_run* run, wharf_offloader* offloader, uint32_t layer, wharf_tensor_view* views, size_t num_views);

/**
 * Records that the run's stream has been given all of `layer`'s work: the copy that reuses
 * its slot may start once the device gets there (no host wait), and the next layer's
 * prefetch is issued. Errors: WHARF_INVALID_ARGUMENT (layer out of range),
 * WHARF_FAILED_PRECONDITION (not waited for first, or already issued), WHARF_DEVICE_ERROR.
 * Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_run_mark_offload_issued(wharf_run* run, wharf_offloader* offloader, uint32_t layer);

/**
 * Ends offloading in `run`: the run's stream joins the copy stream (so the run's completion
 * covers every copy, and a capture is joined back) and the offloader is free for the next
 * run. Call it before wharf_run_end; wharf_run_end does it otherwise. Errors:
 * WHARF_FAILED_PRECONDITION (offloading not begun in this run), WHARF_DEVICE_ERROR.
 * Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_run_end_offload(wharf_run* run, wharf_offloader* offloader);

/* --- replica groups: one container per GPU of a host, updated once, swapped together --- */

/**
 * A replica group: the same model on several GPUs of one host (data-parallel replicas), one
 * container per GPU, each on its own runtime. A group update reads its CPU sources once:
 * they are copied into replica 0 through its staging ring, and NCCL broadcasts them from
 * there (grouped ncclBroadcast calls, one communicator per GPU) into the other replicas, so
 * host memory bandwidth is spent once whatever the number of GPUs. A group swap then
 * publishes every replica's new generation together.
 *
 * Guarantees: a run begun on any replica after wharf_replica_group_swap returns sees the new
 * weights, a run begun before keeps the generation it pinned until it ends, and no run sees
 * old weights on one replica beside new ones on another. A failure anywhere (out of memory
 * on one replica, an NCCL error) stages nothing on any replica. Extra device memory per
 * replica during an update is the updated bytes (copy-on-write, as a container update).
 *
 * Members are written only through the group: while a container is in a group, its own
 * wharf_container_update, _update_from_file, _bind_user_constant, _swap and _free_inactive
 * return WHARF_FAILED_PRECONDITION. Runs and sessions of each replica are used as usual
 * (wharf_run_begin on the replica's container, with sessions of that container).
 *
 * Weight stores: a grouped container that belongs to a weight store brings its whole store
 * (a model package's methods share one). The replica is then every member of that store:
 * the grouped container first, then the others in the order they joined the store; every
 * replica's store must have as many members, declared alike member by member. A group update
 * writes the store's weights as wharf_weight_store_update would: the map names each weight
 * by its FQN (any member's non-derived constant; aliases are not resolved), each replica gets
 * one fresh storage per weight, shared by every member that declares it, and the group swap
 * publishes every member of every replica at once and points each store at the new storage
 * (a container joining the store afterwards shares it). While grouped, the store's own
 * wharf_weight_store_update answers WHARF_FAILED_PRECONDITION. A container that joins the
 * store after the group formed is not in the group: it starts from the weights the store
 * serves when it joins (the group's latest), group updates do not reach it, and it is
 * updated with its own wharf_container_update.
 *
 * Derived constants (WHARF_CONSTANT_DERIVED): a group update needs opts->fold when a written
 * weight reaches a member that declares them. The fold runs on every replica, over that
 * replica's own next generation (its own device and stream, wharf_run_stream), after the
 * new bytes arrived there and before anything is staged; a fold failing on any replica fails
 * the update everywhere with nothing changed. In a store, the fold may write derived
 * constants only (the weights are shared), as in a weight store update. Group calls made
 * from inside the group's own fold answer WHARF_FAILED_PRECONDITION.
 *
 * NCCL is not linked: libnccl.so.2 is opened at run time (dlopen) the first time a CUDA
 * group is created; the environment variable WHARF_NCCL_LIBRARY names another file. NVLink
 * multicast stays off: Wharf sets NCCL_NVLS_ENABLE=0 unless the environment sets it. Groups
 * on the host backend copy between the replicas' memory instead.
 * Threads: all functions are safe to call from many threads; group calls on one group run
 * one at a time (a second waits). Since 0.3 (experimental).
 */
typedef struct wharf_replica_group wharf_replica_group;

/**
 * Groups `containers` (a borrowed array of `num_containers` >= 1 containers; the group
 * keeps them alive). Each replica is on a runtime of its own: on the CUDA backend each on a
 * different GPU. They must be declared alike: the same constants in the same order with the
 * same FQN, dtype, shape and placement, and the same states. Containers should hold the
 * same weights when grouped, or none; a group update with require_full makes them equal
 * whatever they held. The caller owns `*out`.
 * Errors: WHARF_INVALID_ARGUMENT (NULL, no containers, a container given twice, two on one
 * runtime or GPU, mixed backends, declarations that differ, weight stores of different
 * sizes: the first difference is named), WHARF_UNSUPPORTED (NCCL cannot be loaded for a group
 * of 2 or more CUDA replicas, with the loader's reason), WHARF_FAILED_PRECONDITION (a
 * container, or a member of its store, already in a group, or with an update staged and not
 * swapped), WHARF_BUSY (a container is being updated), WHARF_DEVICE_ERROR (NCCL communicator
 * creation). Nothing changes on error. A group of one CUDA replica uses NCCL when it loads
 * and does without otherwise (nothing to broadcast). Since 0.3 (experimental); weight store
 * members and derived constants are accepted since 0.3 (experimental, issue 27).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_replica_group_create(wharf_container* const* containers, size_t num_containers,
                                                                   wharf_replica_group** out);

/**
 * Frees the group (its NCCL communicators included): the containers leave it and may be
 * updated and swapped on their own again. The caller's container handles stay valid.
 * Must not race other calls on the same group. NULL is a no-op. Since 0.3 (experimental).
 */
WHARF_API void wharf_replica_group_free(wharf_replica_group* group);

/** Number of replicas (0 for NULL). Since 0.3 (experimental). */
WHARF_API size_t wharf_replica_group_num_replicas(const wharf_replica_group* group);

/**
 * Stages `map` (borrowed for the call) in the inactive generation of every replica, as
 * wharf_container_update would on each (validation first: a bad map changes nothing), with
 * the sources read once (see above). `opts` may be NULL; only WHARF_TARGET_INACTIVE is
 * supported; `require_full` demands every constant; `wait_stream` orders the reads of the
 * sources (on replica 0's device). Updates accumulate until wharf_replica_group_swap.
 * Returns when every replica holds the staged weights. Errors: those of
 * wharf_container_update, the replica named; WHARF_UNSUPPORTED (in-place target);
 * WHARF_DEVICE_ERROR (NCCL; the message says which call and replica). On any error no
 * replica changes. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_replica_group_update(wharf_replica_group* group, const wharf_constant_map* map,
                                                                   const wharf_update_options* opts);

/**
 * Swaps every replica at once: publishes what group updates staged, or, when nothing is
 * staged, rolls every replica back to its previous generation (as wharf_container_swap).
 * Atomic with respect to wharf_run_begin on every replica; O(number of replicas), no device
 * wait. Errors: WHARF_FAILED_PRECONDITION (nothing to swap in, replica named; nothing is
 * swapped anywhere). Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_replica_group_swap(wharf_replica_group* group);

/**
 * Frees every replica's inactive generation (a staged group update, or the rollback
 * generation), as wharf_container_free_inactive on each; runs in flight keep what they
 * pinned. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_replica_group_free_inactive(wharf_replica_group* group);

/** Counters of a group (the caller sets struct_size). Since 0.3 (experimental). */
typedef struct wharf_replica_group_stats {
  uint32_t struct_size;
  uint32_t num_replicas;
  int32_t nccl_version;      /* ncclGetVersion (e.g. 22703) when the group broadcasts with NCCL; 0 otherwise */
  uint64_t num_updates;      /* group updates that staged */
  uint64_t num_swaps;        /* group swaps, rollbacks included */
  uint64_t source_bytes;     /* bytes read from update sources (once per update) */
  uint64_t broadcast_bytes;  /* bytes written into replicas 1..N-1 from replica 0 */
  uint64_t num_broadcasts;   /* broadcast rounds issued (NCCL group calls, or host copies) */
} wharf_replica_group_stats;

/** Fills `out` up to its struct_size. Thread-safe. Since 0.3 (experimental). */
WHARF_API WHARF_NODISCARD wharf_status* wharf_replica_group_get_stats(const wharf_replica_group* group,
                                                                      wharf_replica_group_stats* out);

/* --- replica groups across processes: one rank per process, formed from a distributed id --- */

/**
 * The id a group spanning processes is formed from: opaque, 256 bytes (room for NCCL's
 * 128-byte ncclUniqueId and a tag saying which transport made it), plain data the caller
 * copies to every rank through its own control plane (Wharf runs no rendezvous service).
 * One id forms one group. Since 0.3 (experimental).
 */
typedef struct wharf_replica_group_id {
  unsigned char internal[256];
} wharf_replica_group_id;

/**
 * Makes a fresh id for a group whose ranks use `runtime`'s backend (call it on one process,
 * usually rank 0's, and send the bytes to the others). On the host backend the id names an
 * abstract Unix-domain socket (Linux) that rank 0 listens on while the group forms: the
 * host transport, a test stand-in for NCCL between processes of one host (a star through
 * rank 0 over sockets, not for production traffic); nothing is created until rank 0 calls
 * wharf_replica_group_create_rank. On the CUDA backend it carries an ncclUniqueId
 * (ncclGetUniqueId; NCCL is opened at run time as for wharf_replica_group_create, and needs
 * 2.14 or later here). Errors: WHARF_INVALID_ARGUMENT (NULL), WHARF_UNSUPPORTED (CUDA: NCCL
 * cannot be loaded or is too old, with the reason), WHARF_DEVICE_ERROR (ncclGetUniqueId).
 * Thread-safe. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_replica_group_get_unique_id(wharf_runtime* runtime,
                                                                          wharf_replica_group_id* out);

/** Options of wharf_replica_group_create_rank. Since 0.3 (experimental). */
typedef struct wharf_replica_group_rank_options {
  uint32_t struct_size;
  uint32_t timeout_ms; /* bound on forming the group and on every wait of an update; 0 (default): 30000 */
} wharf_replica_group_rank_options;

/** Fills the defaults (timeout_ms 0: 30 s) up to `struct_size`. Since 0.3 (experimental). */
WHARF_API void wharf_replica_group_rank_options_init_sized(wharf_replica_group_rank_options* opts,
                                                           size_t struct_size);
#define wharf_replica_group_rank_options_init(opts) \
  wharf_replica_group_rank_options_init_sized((opts), sizeof(*(opts)))

/**
 * Makes `container` (this process's replica; the group keeps it alive) rank `rank` of a group
 * of `size` processes formed from `id` (the same id and size on every rank; `opts` may be
 * NULL). Blocks until every rank has joined, or fails after opts->timeout_ms. The ranks'
 * containers must be declared alike (checked: a hash of the constants' and states' names,
 * order, dtypes, shapes, placements and flags). While in the group the container refuses
 * writes of its own (as in wharf_replica_group_create; a weight store member brings its whole
 * store, and derived constants are folded on every rank: see wharf_replica_group); runs on
 * it are used as usual. The
 * caller owns `*out`: free it with wharf_replica_group_free (its connections close; peers
 * still in an update fail at once naming this rank). Of the other group functions, only
 * wharf_replica_group_update_ranks, _free_inactive, _num_replicas (the size) and _get_stats
 * apply (stats are this rank's: num_replicas is the size, source_bytes counts on rank 0,
 * broadcast_bytes is what rank 0 sent to all others, or what this rank received); _update
 * and _swap return WHARF_FAILED_PRECONDITION.
 * Errors (nothing changes on error; where another rank is at fault, it is named, and every
 * connected rank fails too): WHARF_INVALID_ARGUMENT (NULL, size 0, rank >= size, an id not
 * made for this backend, sizes that differ between ranks, a rank given twice, declarations
 * unlike rank 0's; on CUDA every rank fails and NCCL cannot say which rank differs),
 * WHARF_UNSUPPORTED (CUDA without a usable NCCL), WHARF_FAILED_PRECONDITION (the container, or
 * a member of its store, is in a group already, or has an update staged and not swapped), WHARF_BUSY (the container is being updated),
 * WHARF_ALREADY_EXISTS (rank 0: the id is in use by another group), WHARF_IO_ERROR (a rank
 * did not join within the timeout: rank 0 names the missing ranks; the others say rank 0
 * was not reachable; on CUDA the NCCL communicator is aborted), WHARF_DEVICE_ERROR (NCCL).
 * On CUDA each rank uses one NCCL communicator (ncclCommInitRankConfig, non-blocking, polled
 * against the timeout) on its runtime's device and stream; NVLink multicast stays off.
 * Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_replica_group_create_rank(
    wharf_container* container, const wharf_replica_group_id* id, uint32_t rank, uint32_t size,
    const wharf_replica_group_rank_options* opts, wharf_replica_group** out);

/**
 * One update of every rank, with a two-phase swap. Every rank calls it: rank 0 with `map`
 * (its sources, borrowed for the call, read once), every other rank with map NULL (they
 * receive). `opts` may be NULL; only WHARF_TARGET_INACTIVE; require_full, wait_stream and
 * progress apply on rank 0; fold (and fold_user) on every rank: each rank passes its own,
 * required where a written weight reaches a member with derived constants. Rank 0 validates
 * the map and sends the plan (each weight by FQN, dtype and shape); every rank builds its
 * next generation in fresh slots (extra memory per rank = the updated bytes) while rank 0
 * broadcasts the bytes in batches, then folds its derived constants on its own device; then
 * every rank votes staged-OK or failed, and only when
 * every rank staged does each publish it (as wharf_container_swap: runs begun after see the
 * new weights, runs begun before keep theirs). Runs never wait for the update. Returns
 * WHARF_OK on every rank when the update is published everywhere.
 * On failure, exactly:
 * - rank 0 refuses the map (validation, NULL map on rank 0, in-place target, cancelled before
 *   sending): every rank returns rank 0's error code, nothing changed anywhere;
 * - a rank fails to stage (out of memory, a plan unlike its declarations, its fold callback
 *   failing or missing, a first update that would leave a constant without weights, rank
 *   0's sources unreadable or
 *   its progress callback cancelling): that rank returns its own error, every
 *   other rank the same code naming the lowest failing rank; every rank drops its fresh
 *   slots: nothing changed anywhere, and the group stays usable;
 * - a rank dies, closes its connection or does not answer within timeout_ms: every survivor
 *   returns WHARF_IO_ERROR naming the rank (rank 0 relays the name to the others), drops its
 *   fresh slots and keeps serving its current generation; the group is aborted (later calls
 *   return WHARF_FAILED_PRECONDITION; free it and form a new group). A survivor whose own
 *   connection to rank 0 fails names rank 0. On CUDA the same holds, except that NCCL does
 *   not say which peer failed: the message says a peer rank failed or stopped.
 * - the one window of any two-phase commit: a rank whose connection fails after every rank
 *   voted OK but before it received the decision keeps its old generation and returns
 *   WHARF_IO_ERROR naming rank 0, while the ranks that received the decision publish.
 * Rank 0 need not be a Wharf process: tools/sender/wharf_sender.py joins as rank 0 from a
 * PyTorch trainer and pushes a state dict from its GPU tensors in the same protocol (the
 * bytes: src/replicas/rank_protocol.h); the other ranks call this function with map NULL.
 * Other errors: WHARF_INVALID_ARGUMENT (group NULL; map not NULL on a rank other than 0),
 * WHARF_FAILED_PRECONDITION (a group made by wharf_replica_group_create; an aborted group).
 * Group calls on one group run one at a time. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_replica_group_update_ranks(wharf_replica_group* group,
                                                                         const wharf_constant_map* map,
                                                                         const wharf_update_options* opts);

/* --- state arenas and batched runs ------------------------------------------------------
 *
 * A container created with wharf_container_options.session_capacity S keeps the state of
 * up to S sessions in one allocation per state tensor, slot-major ([S, ...shape]); the
 * addresses are fixed for the arena's life. Containers created with state_arena_of share
 * one arena (the methods of one model: prefill and decode). A session over arena
 * containers takes a free slot when it is created (WHARF_RESOURCE_EXHAUSTED naming the
 * capacity when all S are taken) and keeps it for its life; creating and freeing one is
 * O(1) host work and never waits for the device. Everything else is as for other sessions:
 * lazy initialisation at the first run (or eager), wharf_session_reset writes the initial
 * values into the session's slot only, wharf_session_fork copies slot to slot on the
 * device, budgets (max_state_bytes, max_session_bytes) count each session's own bytes, one
 * run at a time per session (WHARF_BUSY), all stream-ordered, and no operation on one
 * session touches another session's slot. A session covers containers of one arena (or,
 * besides them, containers without states); mixing arenas, or an arena with per-session
 * buffers, is WHARF_INVALID_ARGUMENT.
 *
 * A batched run (wharf_run_begin_batch) covers N sessions of one arena with one pinned
 * generation; a kernel reads the sessions' slot indices (wharf_run_get_slot_indices) and
 * the whole arena tensors (wharf_run_get_tensor on a state: [S, ...shape]) and must read
 * and write only those slots. Runs of one arena session keep working as before: state
 * views are the session's slot ([...shape]), and the slot index tensor holds its one slot.
 * A compiled method over the whole arena (a model package's batched method) runs both
 * kinds of run through wharf_model_run, with the run's slot indices as its "slots" input;
 * with graphs enabled (wharf_model_enable_graphs) each N is captured once and its replays
 * serve any sessions (the arena's address is fixed; the indices are an input).
 * ------------------------------------------------------------------------------------- */

/**
 * Begins a run over `num_sessions` >= 1 distinct sessions (borrowed array; the run keeps
 * them alive) whose states live in `container`'s state arena: one generation is pinned for
 * all of them, and every session is marked busy until wharf_run_end. All or nothing: when
 * a session has an open run (or a reset or fork holds it) the call fails with WHARF_BUSY
 * naming its index and holds nothing. Each session's state is initialised at its first run
 * and ordered after its previous operation on `stream`, as wharf_run_begin does (on the
 * host backend this call waits for that work: the memory is ready when it returns).
 * In the run, wharf_run_get_tensor and wharf_run_get_state_at answer a state with the whole
 * arena ([session_capacity, ...shape], writable; only the run's slots may be written),
 * wharf_run_get_slot_indices gives the sessions' slots in the order of `sessions`, and
 * wharf_run_read of a state reads the arena's bytes. The caller owns `*out` (end it with
 * wharf_run_end, which ends every session's run). A compiled model (wharf_model_run) takes
 * a batched run when it is compiled over the whole arena (a model package's batched method);
 * one compiled over one session's state refuses it (WHARF_UNSUPPORTED).
 * Errors: WHARF_FAILED_PRECONDITION (no state arena, no active weights), WHARF_INVALID_ARGUMENT
 * (NULL arguments, a session twice, a session not covering the container or not in its
 * arena, more sessions than the capacity), WHARF_BUSY, WHARF_OUT_OF_MEMORY (the index buffer).
 * Thread-safe; waits for nothing but what wharf_run_begin waits for. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_run_begin_batch(wharf_container* container,
                                                              wharf_session* const* sessions, size_t num_sessions,
                                                              void* stream, wharf_run** out);

/** The number of sessions of a run: N for a batched run, 1 for a run with a session, else 0. Since 0.3 (experimental). */
WHARF_API size_t wharf_run_num_sessions(const wharf_run* run);

/**
 * The slot indices of the run's sessions: an int64 tensor [N] in the order the sessions
 * were given (one element for a run of one arena session), in device memory (host memory
 * on the host backend), read-only, valid while the run is open, written in stream order on
 * the run's stream (kernels launched on it see it). Errors: WHARF_FAILED_PRECONDITION (the
 * run's sessions hold no arena slot), WHARF_INVALID_ARGUMENT (NULL). Thread-safe.
 * Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_run_get_slot_indices(const wharf_run* run, wharf_tensor_view* out);

/** The session's slot in its container's state arena (fixed for its life), or -1 without an arena or for NULL. Thread-safe. Since 0.3 (experimental). */
WHARF_API int64_t wharf_session_slot(const wharf_session* session);

/** Figures of a state arena. Since 0.3 (experimental). */
typedef struct wharf_state_arena_stats {
  uint32_t struct_size;
  uint32_t num_slots;       /* session_capacity */
  uint32_t num_slots_used;  /* held by live sessions */
  uint32_t num_slots_free;
  uint64_t bytes;           /* the arena's storage: num_slots * one session's bytes, all states */
} wharf_state_arena_stats;

/**
 * Reads the figures of the container's state arena (the caller sets out->struct_size; the
 * answer may be stale once another thread creates or frees a session). Errors:
 * WHARF_FAILED_PRECONDITION (the container has no arena), WHARF_INVALID_ARGUMENT (NULL).
 * Thread-safe. Since 0.3 (experimental).
 */
WHARF_API WHARF_NODISCARD wharf_status* wharf_container_get_state_arena_stats(const wharf_container* container,
                                                                              wharf_state_arena_stats* out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* WHARF_EXPERIMENTAL */
