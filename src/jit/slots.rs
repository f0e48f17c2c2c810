//! Capture slots of relocatable kernels: which device array stands for each captured array's
//! address (a hidden parameter of each CUDA launch, a module variable of the host backend's
//! code), binding arrays to the slots of a deserialised kernel, and the refusal to run one with
//! a slot left empty.

use crate::cache::envelope::SlotDecl;
use crate::capture::{ArrayDesc, CaptureValue, IntoCapture};
use crate::error::{Error, Result};
use crate::ir::{CaptureOrigin, CaptureTy, Elem, Program};
use crate::runtime::launch::CapturedArray;

/// A slot of a relocatable kernel: the module variable that holds the address of one captured
/// device array, what array it takes, and the array bound to it (if any).
#[derive(Clone)]
pub struct CaptureSlot {
    /// What the slot takes; never an address.
    pub decl: SlotDecl,
    /// `factory::param` for a closure variable, else the name.
    qualified: String,
    /// The bound array (its owner keeps the memory alive while the kernel lives).
    bound: Option<ArrayDesc>,
    /// Whether the code may write the array (`abi::written_captures`; for a deserialised
    /// kernel, whose program did not travel, whether the slot takes a writable array).
    written: bool,
}

impl std::fmt::Debug for CaptureSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureSlot").field("decl", &self.decl).field("bound", &self.bound.is_some()).finish()
    }
}

impl CaptureSlot {
    /// The name the source uses for the array (a global's, or a factory parameter's).
    pub fn name(&self) -> &str {
        &self.decl.name
    }

    /// Whether an array is bound to it.
    pub fn is_bound(&self) -> bool {
        self.bound.is_some()
    }

    /// A slot as the interface of a serialised kernel declares it: nothing bound.
    pub(super) fn unbound(decl: SlotDecl) -> CaptureSlot {
        let qualified = match decl.origin.strip_prefix("closure variable '").and_then(|r| r.split_once("' of factory '")) {
            Some((param, rest)) => format!("{}::{param}", rest.trim_end_matches('\'')),
            None => decl.name.clone(),
        };
        let written = decl.ty.writable;
        CaptureSlot { decl, qualified, bound: None, written }
    }
}

/// The slots of a program compiled with relocatable captures, bound to the captured arrays
/// (none in baked mode).
pub(super) fn slots_of(program: &Program, captures: &[CaptureValue], written: &[bool], relocatable: bool) -> Vec<CaptureSlot> {
    if !relocatable {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (id, (c, v)) in program.captures.iter().zip(captures).enumerate() {
        let (CaptureValue::Device(d), CaptureTy::Array { ty, layout, .. }) = (v, c.ty) else { continue };
        let (name, qualified) = match &c.origin {
            CaptureOrigin::Global(n) | CaptureOrigin::Static(n) => (n.clone(), n.clone()),
            CaptureOrigin::FactoryArg { factory, param } => (param.clone(), format!("{factory}::{param}")),
        };
        let decl = SlotDecl {
            symbol: crate::abi::capture_slot_symbol(id),
            name,
            origin: c.origin.to_string(),
            ty,
            layout,
            shape: d.shape().to_vec(),
            strides: d.strides().to_vec(),
        };
        let written = written.get(id).copied().unwrap_or(true);
        out.push(CaptureSlot { decl, qualified, bound: Some(d.clone()), written });
    }
    out
}

/// Each slot's symbol and the address of its array; the first slot without an array is an
/// error naming it.
pub(super) fn slot_values(kernel: &str, slots: &[CaptureSlot]) -> Result<Vec<(String, u64)>> {
    Ok(slots.iter().map(|s| s.decl.symbol.clone()).zip(slot_addresses(kernel, slots)?).collect())
}

/// The address of each slot's array, in slot order (a CUDA launch's hidden parameters); the
/// first slot without an array is an error naming it.
pub(super) fn slot_addresses(kernel: &str, slots: &[CaptureSlot]) -> Result<Vec<u64>> {
    slots
        .iter()
        .map(|s| match &s.bound {
            Some(d) => Ok(d.ptr()),
            None => Err(Error::UnboundCapture { kernel: kernel.to_string(), name: s.decl.name.clone(), origin: s.decl.origin.clone() }),
        })
        .collect()
}

/// The arrays bound to the slots, as the launch checks them (device, aliasing, stream order)
/// like baked captures.
pub(super) fn slot_arrays(slots: &[CaptureSlot]) -> impl Iterator<Item = CapturedArray> + '_ {
    slots
        .iter()
        .filter_map(|s| s.bound.as_ref().map(|d| CapturedArray { origin: s.decl.origin.clone(), desc: d.clone(), written: s.written }))
}

/// Binds `value` to the slots named `name` (or `factory::param`), checking it is a device array
/// of exactly the type, shape and strides the code was compiled for.
pub(super) fn bind(kernel: &str, slots: &mut [CaptureSlot], name: &str, value: impl IntoCapture) -> Result<()> {
    let err = |problem: String| Error::Binding { name: name.to_string(), problem };
    let matching: Vec<usize> = (0..slots.len()).filter(|i| slots[*i].decl.name == name || slots[*i].qualified == name).collect();
    if matching.is_empty() {
        let names: Vec<String> = slots.iter().map(|s| format!("'{}' ({})", s.decl.name, s.decl.origin)).collect();
        return Err(err(if names.is_empty() {
            format!("kernel '{kernel}' has no capture slots (it was not compiled with relocatable captures, or captures no device array)")
        } else {
            format!("kernel '{kernel}' has no capture slot of that name; its slots: {}", names.join(", "))
        }));
    }
    let origins: Vec<&str> = matching.iter().map(|i| slots[*i].qualified.as_str()).collect();
    if origins.iter().any(|o| *o != origins[0]) {
        return Err(err(format!("several captures of kernel '{kernel}' are named so: {}; name one of them", origins.join(", "))));
    }
    let d = match value.into_capture().map_err(|e| err(e.to_string()))? {
        CaptureValue::Device(d) => d,
        _ => return Err(err("a capture slot takes a device array".into())),
    };
    for i in matching {
        let decl = &slots[i].decl;
        if Elem::Scalar(d.elem()) != decl.ty.elem || d.shape().len() != decl.ty.ndim as usize {
            return Err(err(format!(
                "the slot takes a {}-d `{}` array ({}), not a {}",
                decl.ty.ndim,
                decl.ty.elem,
                decl.origin,
                d.describe()
            )));
        }
        if d.shape() != decl.shape || d.strides() != decl.strides {
            return Err(err(format!(
                "the kernel was compiled for shape {:?} and strides {:?} (in elements), which are constants of its code; got shape {:?} \
                 and strides {:?}",
                decl.shape,
                decl.strides,
                d.shape(),
                d.strides()
            )));
        }
        if decl.ty.writable && d.read_only() {
            return Err(err("the kernel writes this array, but it is read-only".into()));
        }
        slots[i].bound = Some(d.clone());
    }
    Ok(())
}
