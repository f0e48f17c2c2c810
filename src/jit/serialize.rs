//! Serialised kernels: a compiled kernel to and from the bytes of an entry envelope that
//! carries its interface (`src/cache/envelope.rs`, the one wire format).

use std::sync::{Arc, Mutex, OnceLock};

use super::Jit;
use super::compiled::{CompiledKernel, Origin, artifact_kind};
use super::kernel::signature_text;
use super::slots::CaptureSlot;
use crate::abi::ParamAbi;
use crate::cache::envelope::{self, BuiltFor, Interface, Param, ParamTy};
use crate::cache::{ArtifactKind, Key, Meta};
use crate::codegen::{self, Artifact};
use crate::error::{Error, Result};
use crate::ir::{EnumTy, Ty};
use crate::library::CodeLibrary;
use crate::runtime::fault::FaultSites;
use crate::target::{Specialization, Target};

impl CompiledKernel {
    /// Serialises to bytes that [`deserialize`](Self::deserialize) loads in another process:
    /// an entry envelope (`src/cache/envelope.rs`) that carries the kernel's interface, and for
    /// host code the CPU it was optimised for, and for a kernel compiled with relocatable
    /// captures the name and type of each capture slot (never an address; bind arrays to them
    /// with [`bind`](Self::bind) after deserialising). A kernel whose code holds the address of a
    /// device array (baked captures), directly or through any linked library, fails with
    /// [`Error::NotSerializable`] naming every such array.
    ///
    /// Only bounds-checked code is serialised ([`deserialize`](Self::deserialize) gives a kernel
    /// that safe launches run): unchecked code is [`Error::BadLaunch`].
    pub fn serialize(&self) -> Result<Vec<u8>> {
        if let Err(refs) = self.library.persistable() {
            return Err(Error::NotSerializable { kernel: self.name.clone(), what: crate::library::describe_device_arrays(&refs) });
        }
        if !self.checked {
            return Err(Error::BadLaunch(format!(
                "kernel '{}' was compiled without bounds checks; only checked code is serialised, since deserialised kernels run through the safe launch",
                self.name
            )));
        }
        let interface = self.interface()?;
        let compile_ms = match self.origin {
            Origin::Compiled { ms } => ms,
            _ => 0,
        };
        let meta = Meta::new(
            self.key,
            &self.name,
            &signature_text(&self.signature, &self.enums, &self.types),
            artifact_kind(&self.artifact),
            &self.entry,
            compile_ms,
        )
        .with_interface(interface);
        Ok(envelope::encode(&meta, self.artifact.bytes()))
    }

    /// How to call it without its source: what a serialised kernel and direct mode's manifest
    /// carry. Fails where the specialisation does not fit the signature.
    pub(super) fn interface(&self) -> Result<Interface> {
        let built_for = match self.target {
            Target::Nvptx(arch) => BuiltFor::Gpu(arch),
            // Host code is only ever compiled or loaded on this CPU (the key names it, and
            // deserialising refuses another), so this CPU is the one it was optimised for.
            Target::Host => BuiltFor::HostCpu(codegen::host_cpu()),
        };
        let unfit = || Error::BadArgument {
            kernel: self.name.clone(),
            param: "(layouts)".into(),
            problem: format!("compiled for array layouts {}, which do not fit its parameters", self.spec.describe()),
        };
        if self.spec.layouts.len() != self.signature.len() {
            return Err(unfit());
        }
        let params = self
            .signature
            .iter()
            .zip(&self.spec.layouts)
            .map(|((name, ty), layout)| {
                let (ty, enum_def) = match (ty, layout) {
                    (Ty::Scalar(s), None) => (ParamTy::Scalar(*s), None),
                    (Ty::Enum(e), None) => (ParamTy::Scalar(e.repr), Some(self.enums.get(e.id as usize).cloned().ok_or_else(unfit)?)),
                    (Ty::Array(a), Some(l)) if a.elem.scalar().is_some() => (ParamTy::Array { ty: *a, layout: *l }, None),
                    // The serialised interface describes scalars and arrays of scalars only.
                    (Ty::Array(_) | Ty::Agg(_), _) => {
                        return Err(Error::BadArgument {
                            kernel: self.name.clone(),
                            param: name.clone(),
                            problem: "kernels with struct parameters cannot be serialised (the serialised interface describes scalars and arrays of scalars): load them from source".into(),
                        });
                    }
                    _ => return Err(unfit()),
                };
                Ok(Param { name: name.clone(), ty, enum_def })
            })
            .collect::<Result<Vec<_>>>()?;
        let slots = self.slots.iter().map(|s| s.decl.clone()).collect();
        Ok(Interface { built_for, params, cooperative: self.cooperative, static_shared: self.static_shared, slots })
    }

    /// Loads a kernel serialised by [`serialize`](Self::serialize). Anything that does not
    /// verify is [`Error::BadSerializedKernel`]; host code optimised for another CPU is
    /// [`Error::ForeignHostCpu`]. A fault report of a deserialised kernel names the array by
    /// its bounds check's number (the source is not serialised).
    ///
    /// # Safety
    ///
    /// The bytes must come from [`serialize`](Self::serialize) (or be a copy of them that
    /// nobody could have tampered with; bytes another build of kache wrote are refused, since
    /// the calling convention of kache's code may differ between builds): they hold machine
    /// code, or PTX, that launches run as bounds-checked kernel code. The envelope's hashes detect damage,
    /// which is refused, but not a forgery, which would run: treat the bytes as you would a
    /// shared library you load.
    pub unsafe fn deserialize(bytes: &[u8]) -> Result<CompiledKernel> {
        let bad = |m: String| Error::BadSerializedKernel(m);
        let (meta, payload) =
            envelope::decode(bytes, None).map_err(|e| bad(format!("the bytes do not verify as a kache kernel of this version: {e}")))?;
        let Some(interface) = meta.interface else {
            return Err(bad("a cache entry, not a serialised kernel: it does not carry the kernel's interface".into()));
        };
        // The code's calling convention (hidden parameters, capture slots, fault records) is
        // this build's: bytes another build wrote are refused rather than launched with it.
        let this = crate::cache::key::build_id();
        if meta.producer != this {
            return Err(bad(format!(
                "kernel '{}' was serialised by kache {}, and this is kache {this}: serialise it again with this build",
                meta.kernel, meta.producer
            )));
        }
        let (target, artifact) = match (&interface.built_for, meta.kind) {
            (&BuiltFor::Gpu(arch), ArtifactKind::Ptx) => {
                (Target::Nvptx(arch), Artifact::Ptx(String::from_utf8(payload.to_vec()).map_err(|_| bad("PTX is not UTF-8".into()))?))
            }
            (&BuiltFor::Gpu(arch), ArtifactKind::Cubin) => (Target::Nvptx(arch), Artifact::Cubin(payload.to_vec())),
            (BuiltFor::HostCpu(cpu), ArtifactKind::HostBitcode) => {
                let this_cpu = codegen::host_cpu();
                if *cpu != this_cpu {
                    return Err(Error::ForeignHostCpu { kernel: meta.kernel, built_for: cpu.clone(), this_cpu });
                }
                (Target::Host, Artifact::HostBitcode(payload.to_vec()))
            }
            (built_for, kind) => {
                let machine = match built_for {
                    BuiltFor::Gpu(arch) => arch.to_string(),
                    BuiltFor::HostCpu(_) => "the host CPU".to_string(),
                };
                return Err(bad(format!("a {kind:?} payload cannot be code built for {machine}")));
            }
        };
        Ok(CompiledKernel::from_interface(meta.key, meta.kernel, meta.entry, interface, target, artifact, Origin::Deserialized, None, true))
    }

    /// A compiled kernel from its interface and code, without its source: a deserialised
    /// kernel, or one direct mode found (with the JIT, whose cubin tier it then uses).
    /// `checked` says whether the code is bounds-checked (a deserialised kernel's always is).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn from_interface(
        key: Key,
        name: String,
        entry: String,
        interface: Interface,
        target: Target,
        artifact: Artifact,
        origin: Origin,
        jit: Option<Jit>,
        checked: bool,
    ) -> CompiledKernel {
        let mut signature = Vec::new();
        let mut layouts = Vec::new();
        let mut abi = Vec::new();
        let mut enums = Vec::new();
        let slots = interface.slots.into_iter().map(CaptureSlot::unbound).collect();
        for p in interface.params {
            match p.ty {
                ParamTy::Scalar(s) if p.enum_def.is_some() => {
                    let id = enums.len() as u32;
                    enums.extend(p.enum_def);
                    signature.push((p.name, Ty::Enum(EnumTy { id, repr: s })));
                    layouts.push(None);
                    abi.push(ParamAbi::Scalar(s));
                }
                ParamTy::Scalar(s) => {
                    signature.push((p.name, Ty::Scalar(s)));
                    layouts.push(None);
                    abi.push(ParamAbi::Scalar(s));
                }
                ParamTy::Array { ty, layout } => {
                    signature.push((p.name, Ty::Array(ty)));
                    layouts.push(Some(layout));
                    abi.push(ParamAbi::Array { elem: ty.elem, ndim: ty.ndim });
                }
            }
        }
        let library = Arc::new(CodeLibrary::new(name.clone(), crate::library::LibraryKind::Kernel, None, Vec::new()));
        CompiledKernel {
            key,
            name: name.clone(),
            target,
            spec: Specialization { layouts },
            signature,
            enums,
            // Serialised kernels take scalars and arrays of scalars only (`serialize` refuses
            // structs), so their signatures name no struct.
            types: crate::ir::Types::default(),
            abi,
            artifact,
            entry,
            cooperative: interface.cooperative,
            static_shared: interface.static_shared,
            max_threads: None,
            library,
            captured: Vec::new(),
            checked,
            // Serialised kernels are read back as code for disjoint arrays (always sound: code
            // compiled for overlapping arrays also runs disjoint ones).
            may_alias: false,
            faults: Arc::new(FaultSites { kernel: name, sites: Vec::new() }),
            slots,
            pinned: false,
            persist: true,
            origin,
            jit,
            host: OnceLock::new(),
            cuda: Default::default(),
            cubin_origin: Mutex::new(None),
            libdevice: None,
        }
    }
}
