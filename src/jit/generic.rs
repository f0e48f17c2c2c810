//! Generic kernels at run time, as numba's dispatcher does it: a launch picks the instance its
//! argument types need (`axpy` launched with `f64` arrays runs `axpy::<f64>`), checks and
//! compiles it on first use through the cache, and keeps it for the next launch; each instance
//! is its own kernel with its own key.

use std::collections::HashMap;
use std::sync::Mutex;

use super::kernel::Kernel;
use super::module::Module;
use crate::error::{Error, Result};
use crate::ir::{Bound, Scalar};
use crate::lang::ast::GenericParamKind;
use crate::lang::{self, GenericKernelSig, LaunchArg};
use crate::runtime::ArgValue;

/// What a generic kernel keeps: its signature, the module it instantiates from, and the
/// instances made so far, by name.
pub(super) struct GenericPart {
    pub(super) sig: GenericKernelSig,
    module: Module,
    instances: Mutex<HashMap<String, Kernel>>,
    /// The instance each launch's argument types picked.
    chosen: Mutex<HashMap<Vec<LaunchArg>, Kernel>>,
}

impl GenericPart {
    pub(super) fn new(sig: GenericKernelSig, module: Module) -> GenericPart {
        GenericPart { sig, module, instances: Mutex::new(HashMap::new()), chosen: Mutex::new(HashMap::new()) }
    }

    /// The module it instantiates from.
    pub(super) fn module(&self) -> &Module {
        &self.module
    }

    /// The error for asking a generic kernel for what only an instance has.
    pub(super) fn not_an_instance(&self) -> Error {
        let example = self
            .sig
            .generics
            .iter()
            .map(|g| match g.kind {
                GenericParamKind::Type(Bound::Int) => "i32".to_string(),
                GenericParamKind::Type(_) => "f32".to_string(),
                GenericParamKind::Const(Scalar::Bool) => "true".to_string(),
                GenericParamKind::Const(_) => "16".to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ");
        Error::GenericKernel {
            kernel: self.sig.name.clone(),
            generics: self.sig.generics.iter().map(|g| g.to_string()).collect::<Vec<_>>().join(", "),
            example,
        }
    }

    /// The instance `name` names (`axpy::<f32>`, spelled any way), made once and kept under
    /// its canonical name.
    pub(super) fn instance_named(&self, name: &str) -> Result<Kernel> {
        if let Some(k) = self.instances.lock().unwrap_or_else(|e| e.into_inner()).get(name) {
            return Ok(k.clone());
        }
        let k = self.module.kernel(name)?;
        let mut map = self.instances.lock().unwrap_or_else(|e| e.into_inner());
        Ok(map.entry(k.name().to_string()).or_insert(k).clone())
    }

    /// The instance that arguments of these types need.
    pub(super) fn instance_for(&self, args: &[ArgValue]) -> Result<Kernel> {
        let name = &self.sig.name;
        if args.len() != self.sig.params.len() {
            return Err(Error::ArgumentCount { kernel: name.clone(), expected: self.sig.params.len(), got: args.len() });
        }
        let kinds: Vec<LaunchArg> = args
            .iter()
            .zip(&self.sig.params)
            .map(|(a, p)| match a {
                ArgValue::Scalar(v) => Ok(LaunchArg::Scalar(v.ty())),
                ArgValue::Array { desc, .. } => Ok(LaunchArg::Array { elem: desc.elem, ndim: desc.shape.len() as u8 }),
                // Instances are inferred from scalar types; a struct argument names none.
                ArgValue::TensorMap(m) => Ok(LaunchArg::TensorMap { elem: m.array.elem }),
                ArgValue::Structs(_) | ArgValue::Struct { .. } => Err(Error::BadArgument {
                    kernel: name.clone(),
                    param: p.0.clone(),
                    problem: "a struct argument cannot pick an instance of a generic kernel: name the instance (`kernel(\"name::<f32>\")`)"
                        .into(),
                }),
            })
            .collect::<Result<_>>()?;
        if let Some(k) = self.chosen.lock().unwrap_or_else(|e| e.into_inner()).get(&kinds) {
            return Ok(k.clone());
        }
        let records = super::records::eligible(&self.module);
        // The source not parsed (a record showed it parses): a record of this choice serves.
        let recorded = (records && !self.module.parsed()).then(|| super::records::recorded_instance(&self.module, name, &kinds)).flatten();
        let picked = match recorded {
            Some(canonical) => canonical,
            None => {
                let canonical = lang::infer_instance(self.module.source.ast()?, name, &kinds)?.canonical;
                if records {
                    super::records::record_instance(&self.module, name, &kinds, &canonical);
                }
                canonical
            }
        };
        let k = self.instance_named(&picked)?;
        self.chosen.lock().unwrap_or_else(|e| e.into_inner()).insert(kinds, k.clone());
        Ok(k)
    }

    /// The names of the instances made so far, sorted.
    pub(super) fn instance_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.instances.lock().unwrap_or_else(|e| e.into_inner()).keys().cloned().collect();
        v.sort();
        v
    }
}
