// SPDX-License-Identifier: Apache-2.0
/**
 * Java API of Wharf: a runtime that keeps an inference model's weights on a device and lets
 * a serving process change them while it serves.
 *
 * <p>{@link dev.wharf.WharfRuntime} drives one device; {@link dev.wharf.ConstantMap} names
 * tensors in host memory (or maps a safetensors file); {@link dev.wharf.Container} holds one
 * model's constants in copy-on-write generations that {@link dev.wharf.Container#update}
 * writes and {@link dev.wharf.Container#swap()} publishes; a {@link dev.wharf.Run} pins one
 * generation while it reads it. A {@link dev.wharf.WeightStore} shares one copy of each
 * weight between containers, and a {@link dev.wharf.Session} holds one conversation's
 * mutable state, which runs name explicitly ({@link dev.wharf.Container#beginRun(Session)}).
 * Every handle is {@link java.lang.AutoCloseable}: use try-with-resources. Errors from the
 * library are {@link dev.wharf.WharfException}s.
 *
 * {@link dev.wharf.Model} runs an AOTInductor-compiled model, and {@link dev.wharf.ModelPackage}
 * loads an exported model package (its methods as models over one weight store) in one call
 * (experimental; CUDA only).
 *
 * <p>The native libraries travel in the jar ({@code native/linux-x86_64/}) and are extracted
 * at first use; the system property {@code wharf.jni.path} (the path of
 * {@code libwharfjni.so}) overrides them, and {@code java.library.path} is searched when
 * neither is there. The JNI layer under this API is package-private.
 */
package dev.wharf;
