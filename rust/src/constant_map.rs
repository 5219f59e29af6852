// SPDX-License-Identifier: Apache-2.0
//! [`ConstantMap`]: names mapped to borrowed tensors.

use std::ffi::{c_char, c_void, CStr, CString};
use std::marker::PhantomData;
use std::path::Path;
use std::ptr::NonNull;

use crate::error::{Code, Error, Result};
use crate::sys;
use crate::tensor::{c_view, num_elements, RawTensor, TensorView};
use crate::types::{cstring, DType, Device, Element};

/// Fully qualified names (FQNs) mapped to tensors (`wharf_constant_map`).
///
/// The map copies names, shapes and strides but *borrows* data: the lifetime `'a` is that
/// of the slices stored with [`set_slice`](Self::set_slice) and friends, so the borrow
/// checker keeps the data alive and unchanged for as long as the map exists. A map loaded
/// with [`load_safetensors`](Self::load_safetensors) owns its file mapping instead
/// (`ConstantMap<'static>`). Entries keep insertion order.
///
/// A map is `Send` and `Sync`: the C API lets many threads read one map at once, and every
/// method that modifies it takes `&mut self`.
///
/// Borrowed data must outlive the map; this does not compile:
///
/// ```compile_fail,E0597
/// # fn main() -> wharf::Result<()> {
/// let mut map = wharf::ConstantMap::new()?;
/// {
///     let weights = vec![1.0f32, 2.0];
///     map.set_slice("w", &[2], &weights)?; // error: `weights` does not live long enough
/// }
/// println!("{}", map.len());
/// # Ok(())
/// # }
/// ```
pub struct ConstantMap<'a> {
    raw: NonNull<sys::wharf_constant_map>,
    _borrow: PhantomData<&'a [u8]>,
}

// SAFETY: the C map has no thread affinity, and the data it borrows is either `&'a [T]`
// with `T: Element` (plain `Sync` numbers), its own file mapping, or memory stored through
// `set_raw`, whose contract requires it to be usable from any thread.
unsafe impl Send for ConstantMap<'_> {}
// SAFETY: wharf.h: "many threads may read one map at once; modifying it (set) while any
// other thread uses it is not allowed". Every `&self` method only reads; set takes `&mut`.
unsafe impl Sync for ConstantMap<'_> {}

impl std::fmt::Debug for ConstantMap<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut list = f.debug_map();
        for (name, t) in self.entries().flatten() {
            list.entry(&name, &(t.dtype(), t.shape().to_vec()));
        }
        list.finish()
    }
}

impl Drop for ConstantMap<'_> {
    fn drop(&mut self) {
        // SAFETY: created by the library, freed once; views handed out borrow `self`.
        unsafe { sys::wharf_constant_map_free(self.raw.as_ptr()) }
    }
}

pub(crate) fn path_cstring(path: &Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path
        .to_str()
        .ok_or_else(|| Error::invalid(format!("path {path:?} is not valid UTF-8")))?
        .as_bytes()
        .to_vec();
    CString::new(bytes).map_err(|_| Error::invalid(format!("path {path:?} contains a NUL byte")))
}

/// A string owned by the library, as `&str` (names come from Rust strings or from a
/// safetensors header, which is JSON and therefore UTF-8).
///
/// # Safety
///
/// `p` is a NUL-terminated string valid for `'s`.
unsafe fn lib_str<'s>(p: *const c_char, what: &str) -> Result<&'s str> {
    if p.is_null() {
        return Err(Error::new(
            Code::Internal,
            format!("{what}: the library returned NULL"),
        ));
    }
    // SAFETY: forwarded from the caller.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Error::new(Code::DataCorrupt, format!("{what} is not valid UTF-8")))
}

impl<'a> ConstantMap<'a> {
    /// Creates an empty map.
    pub fn new() -> Result<ConstantMap<'a>> {
        let mut out = std::ptr::null_mut();
        // SAFETY: a valid out pointer.
        unsafe { Error::check(sys::wharf_constant_map_create(&mut out))? };
        let raw = NonNull::new(out)
            .ok_or_else(|| Error::new(Code::Internal, "wharf_constant_map_create returned NULL"))?;
        Ok(ConstantMap {
            raw,
            _borrow: PhantomData,
        })
    }

    /// Memory-maps a safetensors file read-only and returns a map of its tensors (host
    /// tensors pointing into the mapping, in file order). The whole file is validated
    /// first. Errors: `NotFound`/`IoError` for the file, `DataCorrupt` naming the tensor
    /// at fault.
    ///
    /// # Safety
    ///
    /// As with any memory mapping, the file must not be modified or truncated while the
    /// map (or anything borrowing from it) is alive: [`TensorView::as_slice`] hands out
    /// plain Rust slices of the mapping, which must not change under them, and a
    /// truncated file makes reads fault.
    pub unsafe fn load_safetensors(path: impl AsRef<Path>) -> Result<ConstantMap<'static>> {
        let cpath = path_cstring(path.as_ref())?;
        let mut out = std::ptr::null_mut();
        // SAFETY: valid C string and out pointer.
        unsafe {
            Error::check(sys::wharf_constant_map_load_safetensors(
                cpath.as_ptr(),
                &mut out,
            ))?
        };
        let raw = NonNull::new(out).ok_or_else(|| {
            Error::new(
                Code::Internal,
                "wharf_constant_map_load_safetensors returned NULL",
            )
        })?;
        Ok(ConstantMap {
            raw,
            _borrow: PhantomData,
        })
    }

    pub(crate) fn as_ptr(&self) -> *const sys::wharf_constant_map {
        self.raw.as_ptr()
    }

    /// # Safety
    ///
    /// `view`'s data satisfies the map's borrowing contract for `'a`.
    unsafe fn set_view(&mut self, name: &str, view: &sys::wharf_tensor_view) -> Result<()> {
        let cname = cstring(name, "constant name")?;
        // SAFETY: `&mut self` excludes other users of the map; the library copies the name,
        // shape and strides, and the caller vouches for the data.
        unsafe {
            Error::check(sys::wharf_constant_map_set(
                self.raw.as_ptr(),
                cname.as_ptr(),
                view,
            ))
        }
    }

    /// Adds `name` → `data` as a contiguous, row-major host tensor of `shape`. The map
    /// borrows `data` for `'a`. Errors (`InvalidArgument`): `data.len()` is not the
    /// product of `shape`, a bad shape, an empty name; `AlreadyExists`: the name is taken.
    /// On error the map is unchanged.
    pub fn set_slice<T: Element>(
        &mut self,
        name: &str,
        shape: &[i64],
        data: &'a [T],
    ) -> Result<()> {
        let what = format!("constant '{name}'");
        let n = num_elements(&what, shape)?;
        if n != data.len() {
            return Err(Error::invalid(format!(
                "{what}: shape {shape:?} has {n} elements, the slice {}",
                data.len()
            )));
        }
        let view = c_view(
            data.as_ptr().cast::<c_void>(),
            T::DTYPE,
            Device::Cpu,
            shape,
            None,
        );
        // SAFETY: `data` is host memory of exactly the view's extent, borrowed for 'a.
        unsafe { self.set_view(name, &view) }
    }

    /// Adds `name` → raw bytes of any `dtype` (F16, BF16, F8, BOOL, ...) as a contiguous
    /// host tensor. `data.len()` must be the shape's element count times `dtype.size()`
    /// (times `dtype.bits() / 8` for the sub-byte dtypes, a whole number of bytes).
    pub fn set_bytes(
        &mut self,
        name: &str,
        dtype: DType,
        shape: &[i64],
        data: &'a [u8],
    ) -> Result<()> {
        let what = format!("constant '{name}'");
        let n = num_elements(&what, shape)?;
        let want = dtype.byte_size(n, &format!("{what}: shape {shape:?}"))?;
        if want != data.len() {
            return Err(Error::invalid(format!(
                "{what}: shape {shape:?} of {dtype} is {want} bytes, the slice {}",
                data.len()
            )));
        }
        let view = c_view(
            data.as_ptr().cast::<c_void>(),
            dtype,
            Device::Cpu,
            shape,
            None,
        );
        // SAFETY: host memory of exactly the view's extent, borrowed for 'a.
        unsafe { self.set_view(name, &view) }
    }

    /// Adds `name` → a strided host tensor over `data` (`strides` in elements). Every
    /// element the strides reach must lie inside `data` (checked). Containers accept
    /// contiguous tensors only, but strided ones can be saved
    /// ([`save_safetensors`](Self::save_safetensors) writes them contiguous).
    pub fn set_strided<T: Element>(
        &mut self,
        name: &str,
        shape: &[i64],
        strides: &[i64],
        data: &'a [T],
    ) -> Result<()> {
        let what = format!("constant '{name}'");
        let n = num_elements(&what, shape)?;
        if strides.len() != shape.len() {
            return Err(Error::invalid(format!(
                "{what}: {} strides for {} dimensions",
                strides.len(),
                shape.len()
            )));
        }
        if n > 0 {
            // The last element reached is sum((d - 1) * s); it must be inside the slice.
            let mut last: usize = 0;
            for (&d, &s) in shape.iter().zip(strides) {
                let s = usize::try_from(s).map_err(|_| {
                    Error::invalid(format!("{what}: negative stride in {strides:?}"))
                })?;
                let step = (d as usize - 1)
                    .checked_mul(s)
                    .and_then(|x| x.checked_add(last))
                    .ok_or_else(|| Error::invalid(format!("{what}: strided extent overflows")))?;
                last = step;
            }
            if last >= data.len() {
                return Err(Error::invalid(format!(
                    "{what}: shape {shape:?} with strides {strides:?} reaches element {last}, the slice has {}",
                    data.len()
                )));
            }
        }
        let view = c_view(
            data.as_ptr().cast::<c_void>(),
            T::DTYPE,
            Device::Cpu,
            shape,
            Some(strides),
        );
        // SAFETY: every element the view reaches is inside `data`, borrowed for 'a.
        unsafe { self.set_view(name, &view) }
    }

    /// Adds `name` → a tensor in memory the caller manages (device memory, say).
    ///
    /// # Safety
    ///
    /// `tensor.data` must point to memory of the stated device that holds every element
    /// the shape and strides reach, and it must stay valid, and unchanged, for as long as
    /// the map (or any view or update reading it) is used. Host memory among it must be
    /// readable from any thread.
    pub unsafe fn set_raw(&mut self, name: &str, tensor: &RawTensor<'_>) -> Result<()> {
        tensor.check(&format!("constant '{name}'"))?;
        // SAFETY: forwarded from the caller.
        unsafe { self.set_view(name, &tensor.to_c()) }
    }

    /// Looks up `name`. Errors: `NotFound`.
    pub fn find(&self, name: &str) -> Result<TensorView<'_>> {
        let cname = cstring(name, "constant name")?;
        // SAFETY: all-zero is a valid view to be overwritten.
        let mut v = unsafe { std::mem::zeroed::<sys::wharf_tensor_view>() };
        v.struct_size = std::mem::size_of::<sys::wharf_tensor_view>() as u32;
        // SAFETY: a live map, valid string and out pointer; the view's arrays point into
        // the map, which `&self` keeps unmodified while they are copied.
        unsafe {
            Error::check(sys::wharf_constant_map_find(
                self.as_ptr(),
                cname.as_ptr(),
                &mut v,
            ))?;
            TensorView::from_c(&v)
        }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        // SAFETY: a live map.
        unsafe { sys::wharf_constant_map_num_entries(self.as_ptr()) }
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th entry in insertion order. Errors: `InvalidArgument` for `i >= len()`.
    pub fn entry(&self, i: usize) -> Result<(&str, TensorView<'_>)> {
        let mut fqn: *const c_char = std::ptr::null();
        // SAFETY: all-zero is a valid view to be overwritten.
        let mut v = unsafe { std::mem::zeroed::<sys::wharf_tensor_view>() };
        v.struct_size = std::mem::size_of::<sys::wharf_tensor_view>() as u32;
        // SAFETY: a live map and valid out pointers; the name is owned by the map and lives
        // as long as the `&self` borrow (nothing can modify the map meanwhile).
        unsafe {
            Error::check(sys::wharf_constant_map_get_entry(
                self.as_ptr(),
                i,
                &mut fqn,
                &mut v,
            ))?;
            Ok((lib_str(fqn, "constant name")?, TensorView::from_c(&v)?))
        }
    }

    /// Iterates over the entries in insertion order.
    pub fn entries(&self) -> Entries<'_, 'a> {
        Entries {
            map: self,
            next: 0,
            len: self.len(),
        }
    }

    /// The `__metadata__` entries of a map loaded from safetensors (empty for other maps).
    pub fn metadata(&self) -> Result<Vec<(&str, &str)>> {
        // SAFETY: a live map.
        let n = unsafe { sys::wharf_constant_map_num_metadata_entries(self.as_ptr()) };
        (0..n)
            .map(|i| {
                let (mut key, mut value): (*const c_char, *const c_char) =
                    (std::ptr::null(), std::ptr::null());
                // SAFETY: a live map, i < n, valid out pointers; the strings are owned by the
                // map for the `&self` borrow.
                unsafe {
                    Error::check(sys::wharf_constant_map_get_metadata_entry(
                        self.as_ptr(),
                        i,
                        &mut key,
                        &mut value,
                    ))?;
                    Ok((
                        lib_str(key, "metadata key")?,
                        lib_str(value, "metadata value")?,
                    ))
                }
            })
            .collect()
    }

    /// Sets `__metadata__` entry `key` to `value` (both copied), on any map: a new key is
    /// appended, an existing one keeps its place and takes the new value;
    /// [`save_safetensors`](Self::save_safetensors) writes them. Key and value may be empty
    /// and hold no NUL byte (`InvalidArgument`, and the map is unchanged). Since 0.3.
    pub fn set_metadata(&mut self, key: &str, value: &str) -> Result<()> {
        let ckey = cstring(key, "metadata key")?;
        let cvalue = cstring(value, &format!("metadata key '{key}': value"))?;
        // SAFETY: a live map, exclusively borrowed (no string from `metadata` outlives this
        // call's `&mut self`), and two valid C strings copied by the call.
        unsafe {
            Error::check(sys::wharf_constant_map_set_metadata(
                self.raw.as_ptr(),
                ckey.as_ptr(),
                cvalue.as_ptr(),
            ))
        }
    }

    /// Writes every entry to a safetensors file at `path` (created or replaced
    /// atomically). Entries must be host memory; strided ones are written contiguous.
    /// Errors: `InvalidArgument` (a CUDA tensor, naming it), `IoError`.
    pub fn save_safetensors(&self, path: impl AsRef<Path>) -> Result<()> {
        let cpath = path_cstring(path.as_ref())?;
        // SAFETY: a live map (whose data is valid by its borrowing contract) and a valid path.
        unsafe {
            Error::check(sys::wharf_constant_map_save_safetensors(
                self.as_ptr(),
                cpath.as_ptr(),
            ))
        }
    }
}

/// Iterator over a map's entries, from [`ConstantMap::entries`].
#[derive(Debug)]
pub struct Entries<'m, 'a> {
    map: &'m ConstantMap<'a>,
    next: usize,
    len: usize,
}

impl<'m> Iterator for Entries<'m, '_> {
    type Item = Result<(&'m str, TensorView<'m>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.len {
            return None;
        }
        self.next += 1;
        Some(self.map.entry(self.next - 1))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.len - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Entries<'_, '_> {}
