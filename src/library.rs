//! Code libraries: one function's LLVM module, the libraries linked into it, and the objects
//! it references.
//!
//! Linking a library into another merges its referenced objects, so a kernel's library knows
//! every array captured by any device function or closure linked into it, with the path to it.
//! The cache writer accepts only a [`Persistable`], which can be obtained only from a library
//! that references no device array by address: that is how a device pointer is kept out of
//! every persisted byte. A device array captured relocatably is referenced through a slot the
//! loader fills, so its code holds no address and may be persisted.

use std::fmt;
use std::sync::Arc;

use crate::capture::{CaptureValue, Location, Owner};
use crate::ir::{CaptureOrigin, CaptureTy, FuncId, FuncKind, Program};

/// What kind of function a library holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LibraryKind {
    /// A kernel (or the kernel closure of a factory).
    Kernel,
    /// A device function.
    DeviceFunction,
    /// A device closure.
    Closure,
}

impl fmt::Display for LibraryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LibraryKind::Kernel => "kernel",
            LibraryKind::DeviceFunction => "device function",
            LibraryKind::Closure => "closure",
        })
    }
}

/// An array a library references.
#[derive(Clone)]
pub struct ReferencedObject {
    /// Global, closure variable or static, and its name.
    pub origin: CaptureOrigin,
    /// Device arrays are referenced by pointer; host arrays were copied in.
    pub device: Option<Location>,
    /// Address of a device array (0 for host arrays).
    pub ptr: u64,
    /// A device array captured relocatably: the code reads its address from a slot that the
    /// loader fills, and holds no address.
    pub relocatable: bool,
    /// Keeps a device array's memory alive for as long as the library lives.
    owner: Option<Owner>,
}

impl fmt::Debug for ReferencedObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReferencedObject")
            .field("origin", &self.origin)
            .field("device", &self.device)
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("relocatable", &self.relocatable)
            .finish()
    }
}

impl ReferencedObject {
    /// Whether this library keeps the array's memory alive (device arrays only).
    pub fn keeps_alive(&self) -> bool {
        self.owner.is_some()
    }

    /// The name the source uses for it.
    pub fn name(&self) -> &str {
        match &self.origin {
            CaptureOrigin::Global(n) | CaptureOrigin::Static(n) => n,
            CaptureOrigin::FactoryArg { param, .. } => param,
        }
    }
}

/// A referenced object together with the libraries through which the kernel reaches it.
#[derive(Clone, Debug)]
pub struct Reference {
    /// The object.
    pub object: ReferencedObject,
    /// Libraries between the kernel and the one that references the object, outermost first
    /// (empty when the kernel references it directly).
    pub via: Vec<(LibraryKind, String)>,
}

impl Reference {
    /// `'PRICES' (global, via device function 'price')`.
    pub fn describe(&self) -> String {
        let origin = match &self.object.origin {
            CaptureOrigin::Global(_) => "global".to_string(),
            CaptureOrigin::FactoryArg { factory, .. } => format!("closure variable of factory '{factory}'"),
            CaptureOrigin::Static(_) => "static".to_string(),
        };
        let via: Vec<String> = self.via.iter().map(|(k, n)| format!("{k} '{n}'")).collect();
        if via.is_empty() {
            format!("'{}' ({origin})", self.object.name())
        } else {
            format!("'{}' ({origin}, via {})", self.object.name(), via.join(", "))
        }
    }
}

/// `device array 'G' (global)` for one reference, `device arrays 'A' (global), 'B' (global) and
/// 'C' (static)` for several: every array a message names.
pub fn describe_device_arrays(refs: &[Reference]) -> String {
    let all: Vec<String> = refs.iter().map(Reference::describe).collect();
    match all.as_slice() {
        [one] => format!("device array {one}"),
        [init @ .., last] => format!("device arrays {} and {last}", init.join(", ")),
        [] => "no device array".to_string(),
    }
}

/// One function's compiled LLVM module with what is linked into it and what it references.
pub struct CodeLibrary {
    name: String,
    kind: LibraryKind,
    module: Option<Arc<[u8]>>,
    linked: Vec<Arc<CodeLibrary>>,
    own: Vec<ReferencedObject>,
    merged: Vec<Reference>,
}

impl fmt::Debug for CodeLibrary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodeLibrary")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("module_bytes", &self.module.as_ref().map(|m| m.len()))
            .field("linked", &self.linked.iter().map(|l| l.name.clone()).collect::<Vec<_>>())
            .field("referenced", &self.merged)
            .finish()
    }
}

impl CodeLibrary {
    /// A library for one function; `module` is its LLVM bitcode (absent when the kernel was
    /// loaded from the cache rather than compiled in this process).
    pub fn new(name: impl Into<String>, kind: LibraryKind, module: Option<Vec<u8>>, referenced: Vec<ReferencedObject>) -> CodeLibrary {
        let merged = referenced.iter().map(|o| Reference { object: o.clone(), via: Vec::new() }).collect();
        CodeLibrary { name: name.into(), kind, module: module.map(Into::into), linked: Vec::new(), own: referenced, merged }
    }

    /// Links `other` into this library: its referenced objects become this library's too.
    pub fn link(&mut self, other: Arc<CodeLibrary>) {
        for r in &other.merged {
            if self.merged.iter().any(|m| m.object.origin == r.object.origin) {
                continue;
            }
            let mut via = vec![(other.kind.clone(), other.name.clone())];
            via.extend(r.via.iter().cloned());
            self.merged.push(Reference { object: r.object.clone(), via });
        }
        self.linked.push(other);
    }

    /// The function's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Kernel, device function or closure.
    pub fn kind(&self) -> &LibraryKind {
        &self.kind
    }

    /// The function's own LLVM module (bitcode), when compiled in this process.
    pub fn module(&self) -> Option<&[u8]> {
        self.module.as_deref()
    }

    /// Libraries linked directly into this one.
    pub fn linked(&self) -> &[Arc<CodeLibrary>] {
        &self.linked
    }

    /// Every object this library references, its own and those of every library linked into
    /// it, each with the path to it.
    pub fn referenced(&self) -> &[Reference] {
        &self.merged
    }

    /// The device arrays among [`referenced`](Self::referenced).
    pub fn device_references(&self) -> Vec<&Reference> {
        self.merged.iter().filter(|r| r.object.device.is_some()).collect()
    }

    /// The device arrays among [`referenced`](Self::referenced) whose address is in the code
    /// (captured in baked mode).
    pub fn baked_references(&self) -> Vec<&Reference> {
        self.merged.iter().filter(|r| r.object.device.is_some() && !r.object.relocatable).collect()
    }

    /// Permission to persist: granted only if neither this library nor any library linked into
    /// it references a device array by address (relocatable captures hold none).
    pub fn persistable(&self) -> Result<Persistable<'_>, Vec<Reference>> {
        let device: Vec<Reference> = self.baked_references().into_iter().cloned().collect();
        if device.is_empty() {
            // Walk the linked libraries as well, in case one was linked before it was complete.
            let mut stack: Vec<&CodeLibrary> = self.linked.iter().map(|l| l.as_ref()).collect();
            while let Some(l) = stack.pop() {
                if l.own.iter().any(|o| o.device.is_some() && !o.relocatable) {
                    return Err(l.baked_references().into_iter().cloned().collect());
                }
                stack.extend(l.linked.iter().map(|l| l.as_ref()));
            }
            Ok(Persistable { library: self })
        } else {
            Err(device)
        }
    }

    /// Builds the library tree of a checked program: one library per function reachable from
    /// the kernel, linked like the calls, each referencing the arrays its function captures
    /// (device arrays through slots where `relocatable`).
    pub fn assemble(program: &Program, captures: &[CaptureValue], modules: Option<&[Vec<u8>]>, relocatable: bool) -> Arc<CodeLibrary> {
        let mut built: Vec<Option<Arc<CodeLibrary>>> = vec![None; program.funcs.len()];
        build(program, program.kernel, captures, modules, relocatable, &mut built)
    }
}

fn build(
    p: &Program,
    id: FuncId,
    caps: &[CaptureValue],
    modules: Option<&[Vec<u8>]>,
    relocatable: bool,
    built: &mut Vec<Option<Arc<CodeLibrary>>>,
) -> Arc<CodeLibrary> {
    if let Some(l) = &built[id] {
        return l.clone();
    }
    let f = &p.funcs[id];
    let kind = match f.kind {
        FuncKind::Kernel | FuncKind::KernelClosure { .. } => LibraryKind::Kernel,
        FuncKind::Device => LibraryKind::DeviceFunction,
        FuncKind::Closure { .. } => LibraryKind::Closure,
    };
    let mut own = Vec::new();
    for &c in &f.captures {
        let cap = &p.captures[c];
        if let CaptureTy::Scalar(_) = cap.ty {
            continue;
        }
        let value = caps.get(c);
        let (device, ptr, owner) = match value {
            Some(CaptureValue::Device(d)) => (Some(d.location), d.ptr, Some(d.owner.clone())),
            _ => (None, 0, None),
        };
        own.push(ReferencedObject { origin: cap.origin.clone(), device, ptr, relocatable: relocatable && device.is_some(), owner });
    }
    let module = modules.and_then(|m| m.get(id)).cloned();
    let mut lib = CodeLibrary::new(f.name.clone(), kind, module, own);
    for &c in &f.callees {
        let callee = build(p, c, caps, modules, relocatable, built);
        lib.link(callee);
    }
    let lib = Arc::new(lib);
    built[id] = Some(lib.clone());
    lib
}

/// Proof that a library references no device array; the only way to obtain one is
/// [`CodeLibrary::persistable`].
#[derive(Clone, Copy, Debug)]
pub struct Persistable<'a> {
    library: &'a CodeLibrary,
}

impl Persistable<'_> {
    /// The library.
    pub fn library(&self) -> &CodeLibrary {
        self.library
    }
}
