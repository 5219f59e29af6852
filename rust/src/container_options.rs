// SPDX-License-Identifier: Apache-2.0
//! [`ContainerOptions`] (what [`Container::with_options`](crate::Container::with_options)
//! declares) and [`StateDecl`] (one per-session state tensor).

use crate::container::{ConstantDecl, Container};
use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::store::WeightStore;
use crate::sys;
use crate::tensor::{c_view, num_elements};
use crate::types::{cstring, DType, Device, Element};

/// The declaration of one per-session mutable tensor of a container (`wharf_state_decl`):
/// a KV cache, a recurrent or convolution state. Every [`Session`](crate::Session) over the
/// container gets its own buffer, starting from the initial value (zeros unless
/// [`initial`](Self::initial) gives one); the lifetime `'a` is that of the borrowed
/// initial value, which the container copies when it is created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDecl<'a> {
    pub(crate) fqn: String,
    pub(crate) dtype: DType,
    pub(crate) shape: Vec<i64>,
    /// The initial value: its dtype and its bytes (host memory, contiguous).
    pub(crate) initial: Option<(DType, &'a [u8])>,
}

impl<'a> StateDecl<'a> {
    /// A state starting from zeros.
    pub fn new(fqn: impl Into<String>, dtype: DType, shape: &[i64]) -> StateDecl<'a> {
        StateDecl {
            fqn: fqn.into(),
            dtype,
            shape: shape.to_vec(),
            initial: None,
        }
    }

    /// The value a new (or reset) session starts from, row-major, one element per element
    /// of the shape. It is copied when the container is created. Errors (at creation,
    /// `InvalidArgument`): `data.len()` is not the shape's element count, or `T` is not the
    /// state's dtype.
    pub fn initial<T: Element>(mut self, data: &'a [T]) -> StateDecl<'a> {
        // SAFETY: Element is sealed to plain numbers without padding: their bytes are
        // initialized, and the byte slice covers exactly the elements, borrowed for 'a.
        let bytes = unsafe {
            std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data))
        };
        self.initial = Some((T::DTYPE, bytes));
        self
    }

    /// Like [`initial`](Self::initial), from raw bytes in the state's own dtype (F16, BF16,
    /// F8, BOOL, ...): `data.len()` must be the shape's element count times the dtype's size.
    pub fn initial_bytes(mut self, data: &'a [u8]) -> StateDecl<'a> {
        self.initial = Some((self.dtype, data));
        self
    }
}

/// What a container declares (`wharf_container_options`), for
/// [`Container::with_options`](crate::Container::with_options) and
/// [`Container::from_map_with_options`](crate::Container::from_map_with_options):
/// its name, constants, the [`WeightStore`] it shares constants through, its per-session
/// states and their budget. The lifetime `'a` covers the borrowed store and initial
/// values; the container keeps what it needs (it holds its own reference to the store), so
/// both may go once it is created.
///
/// ```
/// # fn main() -> wharf::Result<()> {
/// use wharf::{Backend, Container, ContainerOptions, ConstantDecl, DType, Runtime, RuntimeOptions, StateDecl, WeightStore};
///
/// let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Host))?;
/// let store = WeightStore::new(&rt)?;
/// let zeros = [0i32; 1];
/// let decode = Container::with_options(
///     &rt,
///     &ContainerOptions::new()
///         .name("decode")
///         .constant(ConstantDecl::new("embed", DType::F32, &[16, 8]))
///         .store(&store)
///         .state(StateDecl::new("kv", DType::F32, &[2, 64, 8]))
///         .state(StateDecl::new("pos", DType::I32, &[1]).initial(&zeros))
///         .max_session_bytes(1 << 20),
/// )?;
/// drop(store); // the container keeps the store alive
/// assert_eq!(decode.num_constants(), 1);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct ContainerOptions<'a> {
    name: String,
    constants: Vec<ConstantDecl>,
    store: Option<&'a WeightStore>,
    states: Vec<StateDecl<'a>>,
    max_session_bytes: u64,
    session_capacity: u32,
    state_arena_of: Option<&'a Container>,
}

impl<'a> ContainerOptions<'a> {
    /// No constants, no store, no states, no budget, the name `"model"`.
    pub fn new() -> ContainerOptions<'a> {
        ContainerOptions::default()
    }

    /// The name used in messages (`""`, the default, means `"model"`).
    pub fn name(mut self, name: impl Into<String>) -> ContainerOptions<'a> {
        self.name = name.into();
        self
    }

    /// Adds one constant.
    pub fn constant(mut self, constant: ConstantDecl) -> ContainerOptions<'a> {
        self.constants.push(constant);
        self
    }

    /// Adds constants, in order.
    pub fn constants(
        mut self,
        constants: impl IntoIterator<Item = ConstantDecl>,
    ) -> ContainerOptions<'a> {
        self.constants.extend(constants);
        self
    }

    /// Shares constants with the other containers of `store` (same FQN, dtype, shape and
    /// placement: one copy). A different declaration under an FQN the store already holds
    /// is refused (`InvalidArgument`, naming both containers), and so is a store of
    /// another runtime. The container keeps the store alive.
    pub fn store(mut self, store: &'a WeightStore) -> ContainerOptions<'a> {
        self.store = Some(store);
        self
    }

    /// Adds one per-session state. A container with states runs only in a
    /// [`Session`](crate::Session).
    pub fn state(mut self, state: StateDecl<'a>) -> ContainerOptions<'a> {
        self.states.push(state);
        self
    }

    /// Adds states, in order.
    pub fn states(
        mut self,
        states: impl IntoIterator<Item = StateDecl<'a>>,
    ) -> ContainerOptions<'a> {
        self.states.extend(states);
        self
    }

    /// A budget in bytes for the state of all live sessions that cover this container
    /// (0, the default, means none): creating (or forking) a session that would pass it
    /// fails with `ResourceExhausted`.
    pub fn max_session_bytes(mut self, bytes: u64) -> ContainerOptions<'a> {
        self.max_session_bytes = bytes;
        self
    }

    /// `> 0`: keep the state of up to `sessions` sessions in one allocation per state
    /// tensor, `[sessions, ...shape]`, made at creation (a state arena): each
    /// [`Session`](crate::Session) takes a slot ([`Session::slot`](crate::Session::slot))
    /// when it is created, and creating one past the capacity fails with
    /// `ResourceExhausted` naming it; [`Container::begin_batch`] runs several sessions at
    /// once. 0 (the default): every session allocates buffers of its own. Not with
    /// [`state_arena_of`](Self::state_arena_of) (`InvalidArgument`).
    #[cfg(feature = "experimental")]
    pub fn session_capacity(mut self, sessions: u32) -> ContainerOptions<'a> {
        self.session_capacity = sessions;
        self
    }

    /// Keep this container's states in the state arena of `container` (only read during
    /// the create call: the arena lives while any container or session uses it), whose
    /// states must include these with equal dtype and shape: the methods of one model
    /// (prefill and decode) sharing their sessions' slots.
    #[cfg(feature = "experimental")]
    pub fn state_arena_of(mut self, container: &'a Container) -> ContainerOptions<'a> {
        self.state_arena_of = Some(container);
        self
    }

    /// Refuses a store of another runtime: its storage lives on that runtime's device
    /// (the library refuses it too; checking here gives the error before any FFI call).
    pub(crate) fn check_runtime(&self, runtime: &Runtime) -> Result<()> {
        match self.store {
            Some(store) if !store.runtime().same_as(runtime) => Err(Error::invalid(format!(
                "container '{}': its weight store belongs to another runtime",
                if self.name.is_empty() {
                    "model"
                } else {
                    &self.name
                }
            ))),
            _ => Ok(()),
        }
    }

    pub(crate) fn has_constants(&self) -> bool {
        !self.constants.is_empty()
    }

    /// Builds the C options (and every array they point to) and passes them to `f`, which
    /// must not keep them past its return. Checks what the C struct cannot express safely:
    /// NUL bytes in names, shapes (rank, negative dimensions, overflow) and the length of
    /// initial values.
    pub(crate) fn with_c<R>(
        &self,
        f: impl FnOnce(&sys::wharf_container_options) -> R,
    ) -> Result<R> {
        let cname = cstring(&self.name, "container name")?;
        let mut fqns = Vec::with_capacity(self.constants.len());
        for c in &self.constants {
            num_elements(&format!("constant '{}'", c.fqn), &c.shape)?;
            fqns.push(cstring(&c.fqn, "constant name")?);
        }
        let decls: Vec<sys::wharf_constant_decl> = self
            .constants
            .iter()
            .zip(&fqns)
            .map(|(c, fqn)| sys::wharf_constant_decl {
                fqn: fqn.as_ptr(),
                dtype: c.dtype.to_raw(),
                ndim: c.shape.len() as i32, // <= MAX_DIMS, checked above
                shape: shape_ptr(&c.shape),
                placement: c.placement.to_raw(),
                flags: if c.derived {
                    sys::WHARF_CONSTANT_DERIVED
                } else {
                    0
                },
                struct_size: std::mem::size_of::<sys::wharf_constant_decl>() as u32,
            })
            .collect();

        let mut state_fqns = Vec::with_capacity(self.states.len());
        for s in &self.states {
            let what = format!("state '{}'", s.fqn);
            let n = num_elements(&what, &s.shape)?;
            if let Some((dtype, bytes)) = s.initial {
                let want = dtype.byte_size(n, &format!("{what}: shape {:?}", s.shape))?;
                if bytes.len() != want {
                    return Err(Error::invalid(format!(
                        "initial value of {what}: shape {:?} of {dtype} is {want} bytes, the slice {}",
                        s.shape,
                        bytes.len()
                    )));
                }
            }
            state_fqns.push(cstring(&s.fqn, "state name")?);
        }
        // Fully built before any pointer into it is taken: the views do not move.
        let initials: Vec<Option<sys::wharf_tensor_view>> = self
            .states
            .iter()
            .map(|s| {
                s.initial.map(|(dtype, bytes)| {
                    c_view(bytes.as_ptr().cast(), dtype, Device::Cpu, &s.shape, None)
                })
            })
            .collect();
        let states: Vec<sys::wharf_state_decl> = self
            .states
            .iter()
            .zip(&state_fqns)
            .zip(&initials)
            .map(|((s, fqn), initial)| sys::wharf_state_decl {
                fqn: fqn.as_ptr(),
                dtype: s.dtype.to_raw(),
                ndim: s.shape.len() as i32, // <= MAX_DIMS, checked above
                shape: shape_ptr(&s.shape),
                initial: initial
                    .as_ref()
                    .map_or(std::ptr::null(), |v| v as *const sys::wharf_tensor_view),
                struct_size: std::mem::size_of::<sys::wharf_state_decl>() as u32,
            })
            .collect();

        // SAFETY: all-zero is valid input for *_init, which fills the defaults.
        let mut o = unsafe { std::mem::zeroed::<sys::wharf_container_options>() };
        // SAFETY: a valid, writable struct.
        unsafe {
            sys::wharf_container_options_init_sized(
                &mut o,
                std::mem::size_of::<sys::wharf_container_options>(),
            )
        };
        if !self.name.is_empty() {
            o.name = cname.as_ptr();
        }
        if !decls.is_empty() {
            o.constants = decls.as_ptr();
            o.num_constants = decls.len();
        }
        o.store = self.store.map_or(std::ptr::null_mut(), WeightStore::as_raw);
        if !states.is_empty() {
            o.states = states.as_ptr();
            o.num_states = states.len();
        }
        o.max_session_bytes = self.max_session_bytes;
        o.session_capacity = self.session_capacity;
        o.state_arena_of = self
            .state_arena_of
            .map_or(std::ptr::null(), |c| c.as_raw().cast_const());
        // Every array `o` points to (cname, fqns, decls, state_fqns, initials, states, the
        // shapes and initial values in `self`) lives until after `f` returns.
        Ok(f(&o))
    }
}

fn shape_ptr(shape: &[i64]) -> *const i64 {
    if shape.is_empty() {
        std::ptr::null()
    } else {
        shape.as_ptr()
    }
}
