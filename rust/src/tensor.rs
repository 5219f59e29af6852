// SPDX-License-Identifier: Apache-2.0
//! Tensor views: [`TensorView`] (read from the library), [`TensorViewMut`] (a run's
//! session state, to write), [`RawTensor`] (handed to the library through `unsafe`
//! functions) and [`FoldTensor`] (inside a fold callback).

use std::ffi::c_void;
use std::marker::PhantomData;

use crate::error::{Code, Error, Result};
use crate::sys;
use crate::types::{DType, Device, Element};

/// Number of elements of `shape` (1 for a scalar), checking for negative dimensions,
/// too many dimensions and overflow.
pub(crate) fn num_elements(what: &str, shape: &[i64]) -> Result<usize> {
    if shape.len() > sys::WHARF_MAX_DIMS {
        return Err(Error::invalid(format!(
            "{what}: {} dimensions, at most {} are allowed",
            shape.len(),
            sys::WHARF_MAX_DIMS
        )));
    }
    shape.iter().try_fold(1usize, |n, &d| {
        let d = usize::try_from(d).map_err(|_| {
            Error::invalid(format!("{what}: negative dimension in shape {shape:?}"))
        })?;
        n.checked_mul(d).ok_or_else(|| {
            Error::invalid(format!(
                "{what}: element count of shape {shape:?} overflows"
            ))
        })
    })
}

/// Builds a C view whose arrays point into `shape` and `strides` (which must outlive its
/// use).
pub(crate) fn c_view(
    data: *const c_void,
    dtype: DType,
    device: Device,
    shape: &[i64],
    strides: Option<&[i64]>,
) -> sys::wharf_tensor_view {
    let (device_type, device_index) = device.to_raw();
    sys::wharf_tensor_view {
        struct_size: std::mem::size_of::<sys::wharf_tensor_view>() as u32,
        flags: 0,
        data: data.cast_mut(),
        dtype: dtype.to_raw(),
        device_type,
        device_index,
        ndim: shape.len() as i32, // callers checked shape.len() <= WHARF_MAX_DIMS
        shape: if shape.is_empty() {
            std::ptr::null()
        } else {
            shape.as_ptr()
        },
        strides: strides.map_or(std::ptr::null(), <[i64]>::as_ptr),
        byte_offset: 0,
    }
}

/// The metadata of a C view, copied out of the library's memory.
#[derive(Debug, Clone, PartialEq)]
struct Meta {
    dtype: DType,
    device: Device,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
}

impl Meta {
    /// # Safety
    ///
    /// `v` must have been filled by the library: `shape`/`strides` valid for `ndim`
    /// elements when non-NULL.
    unsafe fn from_c(v: &sys::wharf_tensor_view) -> Result<Meta> {
        let dtype = DType::from_raw(v.dtype).ok_or_else(|| {
            Error::new(
                crate::Code::Unsupported,
                format!("dtype value {} is unknown to this binding", v.dtype),
            )
        })?;
        let device = Device::from_raw(v.device_type, v.device_index)?;
        let n = usize::try_from(v.ndim).unwrap_or(0);
        // SAFETY: the caller guarantees the arrays hold ndim elements.
        let copy = |p: *const i64| {
            (!p.is_null() && n > 0).then(|| unsafe { std::slice::from_raw_parts(p, n) }.to_vec())
        };
        Ok(Meta {
            dtype,
            device,
            shape: copy(v.shape).unwrap_or_default(),
            strides: copy(v.strides),
        })
    }

    fn num_elements(&self) -> usize {
        self.shape.iter().map(|&d| d.max(0) as usize).product()
    }

    fn is_contiguous(&self) -> bool {
        let Some(strides) = &self.strides else {
            return true;
        };
        let mut want = 1i64;
        for (&d, &s) in self.shape.iter().zip(strides).rev() {
            if d != 1 && s != want {
                return false;
            }
            want = want.saturating_mul(d);
        }
        true
    }
}

/// A borrowed, read-only tensor: one the library handed out (a map entry
/// ([`ConstantMap::find`]), a constant or state of a run ([`Run::tensor`]), a model's
/// output), or an input made from a host slice ([`from_slice`](Self::from_slice)) or raw
/// memory ([`from_raw`](Self::from_raw)). Its data stays valid, and unchanged, for the
/// lifetime `'a` of the borrow. Host memory can be read in place
/// ([`as_slice`](Self::as_slice)); a run's device memory is read with
/// [`Run::read`](crate::Run::read).
///
/// [`ConstantMap::find`]: crate::ConstantMap::find
/// [`Run::tensor`]: crate::Run::tensor
#[derive(Debug, Clone)]
pub struct TensorView<'a> {
    data: *const c_void,
    meta: Meta,
    _borrow: PhantomData<&'a [u8]>,
}

// SAFETY: a TensorView is a shared borrow of immutable memory (like `&'a [u8]`) plus
// owned metadata; reading it from several threads is as safe as reading a shared slice.
unsafe impl Send for TensorView<'_> {}
// SAFETY: as above.
unsafe impl Sync for TensorView<'_> {}

impl<'a> TensorView<'a> {
    /// # Safety
    ///
    /// `v` was filled by the library, and its data is readable (for host memory) and not
    /// mutated for `'a`.
    pub(crate) unsafe fn from_c(v: &sys::wharf_tensor_view) -> Result<TensorView<'a>> {
        // SAFETY: forwarded from the caller.
        let meta = unsafe { Meta::from_c(v)? };
        Ok(TensorView {
            data: v.data.cast_const(),
            meta,
            _borrow: PhantomData,
        })
    }

    /// A view of a host slice, as an input for the library (a model's input, say): `data`
    /// holds `shape`'s elements, row-major. Errors: `InvalidArgument` (the shape's
    /// element count is not `data.len()`, a negative dimension, more than
    /// [`MAX_DIMS`](crate::MAX_DIMS) dimensions).
    pub fn from_slice<T: Element>(data: &'a [T], shape: &[i64]) -> Result<TensorView<'a>> {
        let n = num_elements("TensorView::from_slice", shape)?;
        if n != data.len() {
            return Err(Error::invalid(format!(
                "TensorView::from_slice: shape {shape:?} has {n} elements, the slice {}",
                data.len()
            )));
        }
        Ok(TensorView {
            data: data.as_ptr().cast::<c_void>(),
            meta: Meta {
                dtype: T::DTYPE,
                device: Device::Cpu,
                shape: shape.to_vec(),
                strides: None,
            },
            _borrow: PhantomData,
        })
    }

    /// A view of memory the caller manages (device memory, typically), as an input for
    /// the library. Errors: `InvalidArgument` (a bad shape, strides of another rank).
    ///
    /// # Safety
    ///
    /// `raw.data` holds the whole tensor (every element its shape and strides reach), in
    /// the memory `raw.device` names, and stays valid and unchanged for `'a`: the library
    /// and [`as_slice`](Self::as_slice) (for host memory) read it while the view lives.
    pub unsafe fn from_raw(raw: &RawTensor<'_>) -> Result<TensorView<'a>> {
        raw.check("TensorView::from_raw")?;
        Ok(TensorView {
            data: raw.data,
            meta: Meta {
                dtype: raw.dtype,
                device: raw.device,
                shape: raw.shape.to_vec(),
                strides: raw.strides.map(<[i64]>::to_vec),
            },
            _borrow: PhantomData,
        })
    }

    /// The C view of this tensor; its arrays point into `self`, which must outlive its
    /// use.
    #[cfg_attr(not(feature = "experimental"), allow(dead_code))]
    pub(crate) fn to_c(&self) -> sys::wharf_tensor_view {
        c_view(
            self.data,
            self.meta.dtype,
            self.meta.device,
            &self.meta.shape,
            self.meta.strides.as_deref(),
        )
    }

    /// The address of the first element (a device pointer for [`Device::Cuda`]).
    pub fn data_ptr(&self) -> *const c_void {
        self.data
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.meta.dtype
    }

    /// Where the memory lives.
    pub fn device(&self) -> Device {
        self.meta.device
    }

    /// The dimensions (empty for a scalar).
    pub fn shape(&self) -> &[i64] {
        &self.meta.shape
    }

    /// The strides in elements, or `None` for contiguous row-major.
    pub fn strides(&self) -> Option<&[i64]> {
        self.meta.strides.as_deref()
    }

    /// The number of elements (1 for a scalar).
    pub fn num_elements(&self) -> usize {
        self.meta.num_elements()
    }

    /// The size of the elements in bytes (`num_elements() * dtype().bits() / 8`).
    pub fn num_bytes(&self) -> usize {
        self.num_elements() * self.meta.dtype.bits() / 8
    }

    /// Whether the tensor is row-major without gaps.
    pub fn is_contiguous(&self) -> bool {
        self.meta.is_contiguous()
    }

    /// The data as bytes, if it is contiguous host memory; `None` otherwise.
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        if self.meta.device != Device::Cpu || !self.is_contiguous() {
            return None;
        }
        let n = self.num_bytes();
        if n == 0 {
            return Some(&[]);
        }
        if self.data.is_null() {
            return None;
        }
        // SAFETY: host memory of n bytes, readable and unchanged for 'a (from_c's contract).
        Some(unsafe { std::slice::from_raw_parts(self.data.cast::<u8>(), n) })
    }

    /// The data as a typed slice. Errors ([`Code::InvalidArgument`](crate::Code)): the
    /// dtype is not `T`'s, the memory is not contiguous host memory, or it is not aligned
    /// for `T` (use [`to_vec`](Self::to_vec) then).
    pub fn as_slice<T: Element>(&self) -> Result<&'a [T]> {
        self.check_type::<T>()?;
        let bytes = self.as_bytes().ok_or_else(|| {
            Error::invalid("TensorView::as_slice: the tensor is not contiguous host memory")
        })?;
        if bytes.is_empty() {
            return Ok(&[]);
        }
        if bytes.as_ptr().align_offset(std::mem::align_of::<T>()) != 0 {
            return Err(Error::invalid(format!(
                "TensorView::as_slice: the data is not aligned for {}",
                T::DTYPE
            )));
        }
        // SAFETY: aligned, the right size (dtype checked), and every bit pattern is a valid
        // T (Element is sealed to plain numbers).
        Ok(unsafe {
            std::slice::from_raw_parts(
                bytes.as_ptr().cast::<T>(),
                bytes.len() / std::mem::size_of::<T>(),
            )
        })
    }

    /// Copies the data into a new vector (any alignment). Errors as
    /// [`as_slice`](Self::as_slice), except alignment.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.check_type::<T>()?;
        let bytes = self.as_bytes().ok_or_else(|| {
            Error::invalid("TensorView::to_vec: the tensor is not contiguous host memory")
        })?;
        let n = bytes.len() / std::mem::size_of::<T>();
        let mut out = Vec::<T>::with_capacity(n);
        // SAFETY: out has room for n elements (n * size_of::<T>() == bytes.len()); byte
        // copies need no alignment; every bit pattern is a valid T.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                out.as_mut_ptr().cast::<u8>(),
                bytes.len(),
            );
            out.set_len(n);
        }
        Ok(out)
    }

    fn check_type<T: Element>(&self) -> Result<()> {
        if self.meta.dtype != T::DTYPE {
            return Err(Error::invalid(format!(
                "tensor has dtype {}, the Rust type is {}",
                self.meta.dtype,
                T::DTYPE
            )));
        }
        Ok(())
    }
}

/// A mutable view of one session state of an open run ([`Run::state_mut`]): the memory a
/// run is meant to modify (a KV cache, a recurrent state). It borrows the run mutably, so
/// nothing else of the run (no [`TensorView`] of it, no second mutable view, no
/// [`Run::read`]) is alive while it is, and it cannot outlive the run.
///
/// Host memory (the host backend) is read and written in place with
/// [`as_mut_slice`](Self::as_mut_slice) and [`copy_from_slice`](Self::copy_from_slice). On
/// a CUDA runtime the state is device memory: hand [`data_ptr_mut`](Self::data_ptr_mut) to
/// your kernels on the run's stream ([`Run::stream`]); the slice functions refuse it.
///
/// [`Run::state_mut`]: crate::Run::state_mut
/// [`Run::stream`]: crate::Run::stream
/// [`Run::read`]: crate::Run::read
#[derive(Debug)]
pub struct TensorViewMut<'a> {
    data: *mut c_void,
    meta: Meta,
    _borrow: PhantomData<&'a mut [u8]>,
}

// SAFETY: an exclusive borrow of memory (like `&'a mut [u8]`) plus owned metadata.
unsafe impl Send for TensorViewMut<'_> {}
// SAFETY: `&TensorViewMut` only reads (like `&&mut [u8]`).
unsafe impl Sync for TensorViewMut<'_> {}

impl<'a> TensorViewMut<'a> {
    /// # Safety
    ///
    /// `v` was filled by the library; its data is memory that nothing else reads or writes
    /// for `'a` (the state of a run borrowed mutably for `'a`, whose stream has no work
    /// pending on it), readable and writable by the host when it is host memory.
    pub(crate) unsafe fn from_c(v: &sys::wharf_tensor_view) -> Result<TensorViewMut<'a>> {
        // SAFETY: forwarded from the caller.
        let meta = unsafe { Meta::from_c(v)? };
        Ok(TensorViewMut {
            data: v.data,
            meta,
            _borrow: PhantomData,
        })
    }

    /// The address of the first element (a device pointer for [`Device::Cuda`]).
    pub fn data_ptr(&self) -> *const c_void {
        self.data
    }

    /// The address of the first element, for writing (a device pointer for
    /// [`Device::Cuda`], for kernels on the run's stream).
    pub fn data_ptr_mut(&mut self) -> *mut c_void {
        self.data
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.meta.dtype
    }

    /// Where the memory lives.
    pub fn device(&self) -> Device {
        self.meta.device
    }

    /// The dimensions (empty for a scalar).
    pub fn shape(&self) -> &[i64] {
        &self.meta.shape
    }

    /// The number of elements (1 for a scalar).
    pub fn num_elements(&self) -> usize {
        self.meta.num_elements()
    }

    /// The size of the elements in bytes (`num_elements() * dtype().bits() / 8`).
    pub fn num_bytes(&self) -> usize {
        self.num_elements() * self.meta.dtype.bits() / 8
    }

    /// Checks that the view is contiguous host memory of `T` elements, aligned for `T`;
    /// returns the pointer and the element count.
    fn host_slice_parts<T: Element>(&self, what: &str) -> Result<(*mut T, usize)> {
        if self.meta.dtype != T::DTYPE {
            return Err(Error::invalid(format!(
                "TensorViewMut::{what}: the state has dtype {}, the Rust type is {}",
                self.meta.dtype,
                T::DTYPE
            )));
        }
        if self.meta.device != Device::Cpu || !self.meta.is_contiguous() {
            return Err(Error::invalid(format!(
                "TensorViewMut::{what}: the state is not contiguous host memory ({:?}); write it with your kernels through data_ptr_mut()",
                self.meta.device
            )));
        }
        let n = self.num_elements();
        if n == 0 {
            return Ok((std::ptr::NonNull::<T>::dangling().as_ptr(), 0));
        }
        if self.data.is_null() || self.data.align_offset(std::mem::align_of::<T>()) != 0 {
            return Err(Error::invalid(format!(
                "TensorViewMut::{what}: the data is not aligned for {}",
                T::DTYPE
            )));
        }
        Ok((self.data.cast::<T>(), n))
    }

    /// The state as a slice, if it is contiguous host memory of `T`. Errors
    /// ([`Code::InvalidArgument`](crate::Code)): another dtype, device memory, misaligned.
    pub fn as_slice<T: Element>(&self) -> Result<&[T]> {
        let (p, n) = self.host_slice_parts::<T>("as_slice")?;
        // SAFETY: n elements of host memory that only this view accesses for 'a (from_c's
        // contract), aligned, every bit pattern a valid T (Element is sealed to plain
        // numbers); the shared borrow of self keeps the mutable uses out.
        Ok(unsafe { std::slice::from_raw_parts(p.cast_const(), n) })
    }

    /// The state as a mutable slice, if it is contiguous host memory of `T`. Errors as
    /// [`as_slice`](Self::as_slice).
    pub fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T]> {
        let (p, n) = self.host_slice_parts::<T>("as_mut_slice")?;
        // SAFETY: as in as_slice, and the exclusive borrow of self makes this the only
        // access for the slice's lifetime.
        Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
    }

    /// The state as a mutable slice for the whole borrow of the run. Errors as
    /// [`as_slice`](Self::as_slice).
    pub fn into_mut_slice<T: Element>(self) -> Result<&'a mut [T]> {
        let (p, n) = self.host_slice_parts::<T>("into_mut_slice")?;
        // SAFETY: as in as_mut_slice; the view is consumed, so the slice is the only
        // access for 'a.
        Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
    }

    /// Copies `src` over the whole state (host memory; any alignment). Errors:
    /// `InvalidArgument` (another dtype or length, device memory).
    pub fn copy_from_slice<T: Element>(&mut self, src: &[T]) -> Result<()> {
        if self.meta.dtype != T::DTYPE {
            return Err(Error::invalid(format!(
                "TensorViewMut::copy_from_slice: the state has dtype {}, the Rust type is {}",
                self.meta.dtype,
                T::DTYPE
            )));
        }
        if self.meta.device != Device::Cpu || !self.meta.is_contiguous() {
            return Err(Error::invalid(format!(
                "TensorViewMut::copy_from_slice: the state is not contiguous host memory ({:?}); write it with your kernels through data_ptr_mut()",
                self.meta.device
            )));
        }
        if src.len() != self.num_elements() {
            return Err(Error::invalid(format!(
                "TensorViewMut::copy_from_slice: the state has {} elements, the slice {}",
                self.num_elements(),
                src.len()
            )));
        }
        if src.is_empty() {
            return Ok(());
        }
        // SAFETY: the state holds exactly size_of_val(src) bytes of host memory that only
        // this view accesses (from_c's contract); byte copies need no alignment; `src` is
        // a Rust slice, so it cannot overlap memory this view borrows exclusively.
        unsafe {
            std::ptr::copy_nonoverlapping(
                src.as_ptr().cast::<u8>(),
                self.data.cast::<u8>(),
                std::mem::size_of_val(src),
            )
        };
        Ok(())
    }
}

/// A tensor in memory the caller manages, for the `unsafe` functions that take raw
/// pointers ([`ConstantMap::set_raw`], [`Container::bind_user_constant`]): device
/// memory, memory mapped by other means, and so on.
///
/// [`ConstantMap::set_raw`]: crate::ConstantMap::set_raw
/// [`Container::bind_user_constant`]: crate::Container::bind_user_constant
#[derive(Debug, Clone, Copy)]
pub struct RawTensor<'s> {
    /// The first element (a device pointer for [`Device::Cuda`]).
    pub data: *const c_void,
    /// The element type.
    pub dtype: DType,
    /// Where the memory lives.
    pub device: Device,
    /// The dimensions (empty for a scalar).
    pub shape: &'s [i64],
    /// Strides in elements; `None` for contiguous row-major.
    pub strides: Option<&'s [i64]>,
}

impl RawTensor<'_> {
    pub(crate) fn check(&self, what: &str) -> Result<()> {
        num_elements(what, self.shape)?;
        if let Some(s) = self.strides {
            if s.len() != self.shape.len() {
                return Err(Error::invalid(format!(
                    "{what}: {} strides for {} dimensions",
                    s.len(),
                    self.shape.len()
                )));
            }
        }
        Ok(())
    }

    pub(crate) fn to_c(self) -> sys::wharf_tensor_view {
        c_view(self.data, self.dtype, self.device, self.shape, self.strides)
    }
}

/// A constant of the generation a fold callback is writing
/// ([`FoldRun::tensor`](crate::FoldRun::tensor)). Derived constants, and the constants the
/// update writes, are written through [`data_ptr_mut`](Self::data_ptr_mut) (host memory on
/// the host backend, device memory for your kernels on CUDA), so access is raw: the binding
/// cannot know what else touches it. Every other constant is read-only
/// ([`is_read_only`](Self::is_read_only)): its storage is the active generation's, which
/// open and new runs read, and `data_ptr_mut` refuses it.
#[derive(Debug, Clone)]
pub struct FoldTensor {
    data: *mut c_void,
    read_only: bool,
    meta: Meta,
}

impl FoldTensor {
    /// # Safety
    ///
    /// As [`Meta::from_c`].
    pub(crate) unsafe fn from_c(v: &sys::wharf_tensor_view) -> Result<FoldTensor> {
        // SAFETY: forwarded from the caller.
        Ok(FoldTensor {
            data: v.data,
            read_only: v.flags & sys::WHARF_VIEW_READ_ONLY != 0,
            meta: unsafe { Meta::from_c(v)? },
        })
    }

    /// The address of the first element, for reading. Valid only during the fold callback.
    pub fn data_ptr(&self) -> *const c_void {
        self.data
    }

    /// The address of the first element, for writing: a derived constant, or one the update
    /// writes. Valid only during the fold callback. Errors: `FailedPrecondition` for a
    /// read-only constant (see [`is_read_only`](Self::is_read_only)).
    pub fn data_ptr_mut(&self) -> Result<*mut c_void> {
        if self.read_only {
            return Err(Error::new(
                Code::FailedPrecondition,
                "the constant is read-only in this fold: this update does not write it, so its \
                 storage is the active generation's, which open and new runs read (a fold \
                 writes derived constants and the constants its update writes)",
            ));
        }
        Ok(self.data)
    }

    /// Whether the library marked the constant read-only (`WHARF_VIEW_READ_ONLY`): neither
    /// derived nor written by this update.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.meta.dtype
    }

    /// Where the memory lives.
    pub fn device(&self) -> Device {
        self.meta.device
    }

    /// The dimensions (empty for a scalar).
    pub fn shape(&self) -> &[i64] {
        &self.meta.shape
    }

    /// The number of elements (1 for a scalar).
    pub fn num_elements(&self) -> usize {
        self.meta.num_elements()
    }
}
