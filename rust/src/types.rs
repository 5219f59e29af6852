// SPDX-License-Identifier: Apache-2.0
//! Plain enums of the C API and the [`Element`] trait.

use std::ffi::{CStr, CString};
use std::fmt;

use crate::error::{Code, Error, Result};
use crate::sys;

/// A tensor element type (`wharf_dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DType {
    /// 32-bit float.
    F32,
    /// IEEE 16-bit float.
    F16,
    /// bfloat16.
    BF16,
    /// 64-bit float.
    F64,
    /// 8-bit float, 4 exponent and 3 mantissa bits.
    F8E4M3,
    /// 8-bit float, 5 exponent and 2 mantissa bits.
    F8E5M2,
    /// Signed 8-bit integer.
    I8,
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 16-bit integer.
    I16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Boolean, one byte.
    Bool,
    /// Unsigned 16-bit integer. Since 0.3, as the rest below.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// Complex number of two 32-bit floats (real, imaginary).
    C64,
    /// OCP MX scale: an 8-bit exponent, no sign, no mantissa.
    F8E8M0,
    /// 8-bit float E4M3, finite, unsigned zero (AMD).
    F8E4M3Fnuz,
    /// 8-bit float E5M2, finite, unsigned zero (AMD).
    F8E5M2Fnuz,
    /// OCP MXFP4 E2M1: 4 bits, two per byte.
    F4,
    /// OCP MXFP6 E2M3: 6 bits, four per three bytes.
    F6E2M3,
    /// OCP MXFP6 E3M2: 6 bits, four per three bytes.
    F6E3M2,
}

impl DType {
    const ALL: [DType; 22] = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::F64,
        DType::F8E4M3,
        DType::F8E5M2,
        DType::I8,
        DType::U8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::Bool,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::C64,
        DType::F8E8M0,
        DType::F8E4M3Fnuz,
        DType::F8E5M2Fnuz,
        DType::F4,
        DType::F6E2M3,
        DType::F6E3M2,
    ];

    /// Every element type, in `wharf_dtype` order.
    pub fn all() -> impl Iterator<Item = DType> {
        DType::ALL.into_iter()
    }

    /// The raw `wharf_dtype` value.
    pub fn to_raw(self) -> sys::wharf_dtype {
        match self {
            DType::F32 => sys::WHARF_DTYPE_F32,
            DType::F16 => sys::WHARF_DTYPE_F16,
            DType::BF16 => sys::WHARF_DTYPE_BF16,
            DType::F64 => sys::WHARF_DTYPE_F64,
            DType::F8E4M3 => sys::WHARF_DTYPE_F8_E4M3,
            DType::F8E5M2 => sys::WHARF_DTYPE_F8_E5M2,
            DType::I8 => sys::WHARF_DTYPE_I8,
            DType::U8 => sys::WHARF_DTYPE_U8,
            DType::I16 => sys::WHARF_DTYPE_I16,
            DType::I32 => sys::WHARF_DTYPE_I32,
            DType::I64 => sys::WHARF_DTYPE_I64,
            DType::Bool => sys::WHARF_DTYPE_BOOL,
            DType::U16 => sys::WHARF_DTYPE_U16,
            DType::U32 => sys::WHARF_DTYPE_U32,
            DType::U64 => sys::WHARF_DTYPE_U64,
            DType::C64 => sys::WHARF_DTYPE_C64,
            DType::F8E8M0 => sys::WHARF_DTYPE_F8_E8M0,
            DType::F8E4M3Fnuz => sys::WHARF_DTYPE_F8_E4M3FNUZ,
            DType::F8E5M2Fnuz => sys::WHARF_DTYPE_F8_E5M2FNUZ,
            DType::F4 => sys::WHARF_DTYPE_F4,
            DType::F6E2M3 => sys::WHARF_DTYPE_F6_E2M3,
            DType::F6E3M2 => sys::WHARF_DTYPE_F6_E3M2,
        }
    }

    /// Converts a raw `wharf_dtype`; `None` for a value this binding does not know.
    pub fn from_raw(raw: sys::wharf_dtype) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.to_raw() == raw)
    }

    /// Bytes per element; 0 for the dtypes narrower than a byte ([`F4`](DType::F4),
    /// [`F6E2M3`](DType::F6E2M3), [`F6E3M2`](DType::F6E3M2): see [`bits`](Self::bits)).
    pub fn size(self) -> usize {
        // SAFETY: a plain function of a valid enum value.
        unsafe { sys::wharf_dtype_size(self.to_raw()) }
    }

    /// Bits per element (4, 6, 8, 16, 32 or 64). A tensor of `n` elements holds
    /// `n * bits / 8` bytes; tensors of the sub-byte dtypes must be contiguous and a whole
    /// number of bytes. Since 0.3.
    pub fn bits(self) -> usize {
        // SAFETY: a plain function of a valid enum value.
        unsafe { sys::wharf_dtype_bits(self.to_raw()) }
    }

    /// The bytes of `n` elements: `InvalidArgument` (naming `what`) when that overflows or,
    /// for a sub-byte dtype, is not a whole number of bytes.
    pub(crate) fn byte_size(self, n: usize, what: &str) -> Result<usize> {
        let bits = n
            .checked_mul(self.bits())
            .ok_or_else(|| Error::invalid(format!("{what}: byte size overflows")))?;
        if bits % 8 != 0 {
            return Err(Error::invalid(format!(
                "{what}: {n} elements of {self} are {bits} bits, not a whole number of bytes"
            )));
        }
        Ok(bits / 8)
    }

    /// The safetensors spelling (`"F32"`, `"BF16"`, `"F8_E4M3"`, `"BOOL"`, ...).
    pub fn name(self) -> &'static str {
        // SAFETY: for a known dtype the library returns a static NUL-terminated string.
        let name = unsafe { sys::wharf_dtype_name(self.to_raw()) };
        if name.is_null() {
            return "UNKNOWN";
        }
        // SAFETY: checked non-NULL above; static storage.
        unsafe { CStr::from_ptr(name) }
            .to_str()
            .unwrap_or("UNKNOWN")
    }

    /// Parses a safetensors dtype name. Errors: [`Code::NotFound`] for an unknown name.
    pub fn from_name(name: &str) -> Result<DType> {
        let cname = cstring(name, "dtype name")?;
        let mut raw: sys::wharf_dtype = 0;
        // SAFETY: valid C string and out pointer for the call.
        unsafe { Error::check(sys::wharf_dtype_from_name(cname.as_ptr(), &mut raw))? };
        DType::from_raw(raw).ok_or_else(|| {
            Error::new(
                Code::Unsupported,
                format!("dtype value {raw} is unknown to this binding"),
            )
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for DType {
    type Err = Error;
    fn from_str(s: &str) -> Result<DType> {
        DType::from_name(s)
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type whose slices the library can read and write directly as a [`DType`]:
/// plain numbers in which every bit pattern is a valid value. Sealed.
pub trait Element: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The element type the library knows this Rust type as.
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
        }
    )*};
}
element!(f32 => F32, f64 => F64, i8 => I8, u8 => U8, i16 => I16, i32 => I32, i64 => I64,
         u16 => U16, u32 => U32, u64 => U64);

/// Where a tensor's memory lives (`wharf_device_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Device {
    /// Host memory, pageable or pinned.
    Cpu,
    /// CUDA device memory of the given device ordinal.
    Cuda(i32),
}

impl Device {
    pub(crate) fn to_raw(self) -> (sys::wharf_device_type, i32) {
        match self {
            Device::Cpu => (sys::WHARF_DEVICE_CPU, 0),
            Device::Cuda(i) => (sys::WHARF_DEVICE_CUDA, i),
        }
    }

    pub(crate) fn from_raw(kind: sys::wharf_device_type, index: i32) -> Result<Device> {
        match kind {
            sys::WHARF_DEVICE_CPU => Ok(Device::Cpu),
            sys::WHARF_DEVICE_CUDA => Ok(Device::Cuda(index)),
            other => Err(Error::new(
                Code::Unsupported,
                format!("device type {other} is unknown to this binding"),
            )),
        }
    }
}

/// The runtime's device backend (`wharf_backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Backend {
    /// CUDA when a device is usable, the host backend otherwise (logged).
    #[default]
    Auto,
    /// A CUDA GPU.
    Cuda,
    /// Host memory and worker-thread streams; runs anywhere.
    Host,
}

impl Backend {
    pub(crate) fn to_raw(self) -> sys::wharf_backend {
        match self {
            Backend::Auto => sys::WHARF_BACKEND_AUTO,
            Backend::Cuda => sys::WHARF_BACKEND_CUDA,
            Backend::Host => sys::WHARF_BACKEND_HOST,
        }
    }

    pub(crate) fn from_raw(raw: sys::wharf_backend) -> Backend {
        match raw {
            sys::WHARF_BACKEND_CUDA => Backend::Cuda,
            sys::WHARF_BACKEND_HOST => Backend::Host,
            _ => Backend::Auto,
        }
    }
}

/// Where a container keeps a constant (`wharf_placement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Placement {
    /// Device memory (host memory on the host backend).
    #[default]
    Device,
    /// Pinned host memory, even for a CUDA model.
    Host,
}

impl Placement {
    pub(crate) fn to_raw(self) -> sys::wharf_placement {
        match self {
            Placement::Device => sys::WHARF_PLACEMENT_DEVICE,
            Placement::Host => sys::WHARF_PLACEMENT_HOST,
        }
    }

    pub(crate) fn from_raw(raw: sys::wharf_placement) -> Result<Placement> {
        match raw {
            sys::WHARF_PLACEMENT_DEVICE => Ok(Placement::Device),
            sys::WHARF_PLACEMENT_HOST => Ok(Placement::Host),
            other => Err(Error::new(
                Code::Unsupported,
                format!("placement {other} is unknown to this binding"),
            )),
        }
    }
}

/// Which generation an update writes (`wharf_update_target`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum UpdateTarget {
    /// Write the inactive generation; [`Container::swap`](crate::Container::swap)
    /// publishes it.
    #[default]
    Inactive,
    /// Write and publish at once: when the update returns, the container has a new
    /// generation id holding the new data, and runs begun afterwards see only it. A
    /// written constant whose storage nothing else references is overwritten in place (no
    /// extra memory); the update waits for open runs that pinned it, up to
    /// [`UpdateOptions::in_place_max_wait`](crate::UpdateOptions::in_place_max_wait), and
    /// gives storage still pinned after that (or shared with another generation, container
    /// or store) fresh storage instead. Open runs never see their data change.
    ActiveInPlace,
}

impl UpdateTarget {
    pub(crate) fn to_raw(self) -> sys::wharf_update_target {
        match self {
            UpdateTarget::Inactive => sys::WHARF_TARGET_INACTIVE,
            UpdateTarget::ActiveInPlace => sys::WHARF_TARGET_ACTIVE_IN_PLACE,
        }
    }
}

/// The severity of a library log line (`wharf_log_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LogLevel {
    /// Debugging detail.
    Debug,
    /// Information.
    Info,
    /// Something unexpected that Wharf handled.
    Warn,
    /// A failure.
    Error,
    /// No logging (only meaningful as a minimum level).
    Off,
}

impl LogLevel {
    pub(crate) fn to_raw(self) -> sys::wharf_log_level {
        match self {
            LogLevel::Debug => sys::WHARF_LOG_DEBUG,
            LogLevel::Info => sys::WHARF_LOG_INFO,
            LogLevel::Warn => sys::WHARF_LOG_WARN,
            LogLevel::Error => sys::WHARF_LOG_ERROR,
            LogLevel::Off => sys::WHARF_LOG_OFF,
        }
    }

    pub(crate) fn from_raw(raw: sys::wharf_log_level) -> LogLevel {
        match raw {
            sys::WHARF_LOG_DEBUG => LogLevel::Debug,
            sys::WHARF_LOG_INFO => LogLevel::Info,
            sys::WHARF_LOG_WARN => LogLevel::Warn,
            sys::WHARF_LOG_ERROR => LogLevel::Error,
            _ => LogLevel::Off,
        }
    }
}

/// An allocation tag: an index into [`MemoryStats`](crate::MemoryStats)'s per-tag figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemoryTag {
    /// Container constants.
    Constants,
    /// Session state.
    State,
    /// The pinned staging ring.
    Staging,
    /// Scratch space.
    Workspace,
    /// Offloaded layers.
    Offload,
    /// CUDA graphs.
    Graph,
}

impl MemoryTag {
    pub(crate) fn index(self) -> usize {
        (match self {
            MemoryTag::Constants => sys::WHARF_MEM_CONSTANTS,
            MemoryTag::State => sys::WHARF_MEM_STATE,
            MemoryTag::Staging => sys::WHARF_MEM_STAGING,
            MemoryTag::Workspace => sys::WHARF_MEM_WORKSPACE,
            MemoryTag::Offload => sys::WHARF_MEM_OFFLOAD,
            MemoryTag::Graph => sys::WHARF_MEM_GRAPH,
        }) as usize
    }
}

/// A C string for an argument, or [`Code::InvalidArgument`] if `s` contains a NUL byte.
pub(crate) fn cstring(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::invalid(format!("{what} {s:?} contains a NUL byte")))
}
