//! Compiling several kernels together ([`Jit::compile_many`], [`Module::compile_all`],
//! [`Jit::assemble_cubins`]): every key is looked up in one pass over the cache's tiers (one
//! round trip to a remote cache), the misses are compiled, and their entries stored together
//! (one more round trip). This is how the `kache` command compiles a file and how the prebuild
//! step compiles a kernel file.

use std::sync::Arc;

use super::Jit;
use super::compiled::CompiledKernel;
use super::kernel::{Kernel, Prepared};
use super::module::Module;
use crate::cache::{Entry, Lookup};
use crate::error::Result;
use crate::ir::Layout;
use crate::target::{Options, Specialization, Target};

/// One compile of a batch: a kernel, for a target, with array layouts.
#[derive(Clone, Debug)]
pub struct CompileRequest {
    /// The kernel.
    pub kernel: Kernel,
    /// What to compile for.
    pub target: Target,
    /// The layout of each array parameter.
    pub spec: Specialization,
}

impl CompileRequest {
    /// `kernel` for `target` with every array parameter C-contiguous.
    pub fn new(kernel: &Kernel, target: Target) -> CompileRequest {
        let spec = Specialization::uniform(kernel.program(), Layout::C);
        CompileRequest { kernel: kernel.clone(), target, spec }
    }
}

impl Jit {
    /// Compiles (or fetches from the cache) every request, as [`Kernel::compile`] would one by
    /// one, but looking every key up in one pass over the cache's tiers and storing the
    /// compiled entries together: with a remote cache, one round trip for the lookups and one
    /// for the stores. The results are in the order of the requests; one failing does not stop
    /// the others.
    ///
    /// ```
    /// use kache::CompileRequest;
    /// let jit = kache::Jit::new(kache::Config::in_memory())?;
    /// let m = jit.load_source("two.rs", "#[kernel] pub fn a(x: &mut [f32]) { x[0] = 1.0; }\n\
    ///                                    #[kernel] pub fn b(x: &mut [f32]) { x[0] = 2.0; }")?;
    /// let requests = [CompileRequest::new(&m.kernel("a")?, kache::Target::Host), CompileRequest::new(&m.kernel("b")?, kache::Target::Host)];
    /// let compiled = jit.compile_many(&requests);
    /// assert!(compiled.iter().all(|c| c.is_ok()));
    /// # Ok::<(), kache::Error>(())
    /// ```
    pub fn compile_many(&self, requests: &[CompileRequest]) -> Vec<Result<Arc<CompiledKernel>>> {
        let options: Vec<Options> = requests.iter().map(|r| self.config().options(r.target)).collect();
        self.compile_many_with(requests, &options)
    }

    /// [`Jit::compile_many`] with each request's code generation options given in full (the
    /// prebuild step's host code for a named CPU), `options[i]` for `requests[i]`.
    pub(crate) fn compile_many_with(&self, requests: &[CompileRequest], options: &[Options]) -> Vec<Result<Arc<CompiledKernel>>> {
        let cache = self.cache();
        let mut out: Vec<Option<Result<Arc<CompiledKernel>>>> =
            requests.iter().zip(options).map(|(r, o)| r.kernel.memoized(o, &r.spec).map(Ok)).collect();
        // Derive every key first; a request whose key cannot be derived fails alone.
        let mut pending: Vec<(usize, Prepared)> = Vec::new();
        for (i, r) in requests.iter().enumerate() {
            if out[i].is_some() {
                continue;
            }
            match r.kernel.prepare(&options[i], &r.spec, None) {
                Ok(p) => pending.push((i, p)),
                Err(e) => out[i] = Some(Err(e)),
            }
        }
        let keys: Vec<_> = pending.iter().map(|(_, p)| p.key).collect();
        let found = cache.lookup_many(&keys);
        let mut built: Vec<(usize, Arc<CompiledKernel>, Option<Entry>)> = Vec::new();
        for ((i, prepared), lookup) in pending.iter().zip(found.into_iter().chain(std::iter::repeat_with(|| Lookup::Miss))) {
            let r = &requests[*i];
            if let Some(c) = r.kernel.take_hit(r.target, &r.spec, prepared, lookup, options[*i].checked) {
                out[*i] = Some(Ok(r.kernel.memoize(&options[*i], &r.spec, c)));
                continue;
            }
            match r.kernel.build(&options[*i], &r.spec, prepared) {
                Ok((c, entry)) => built.push((*i, c, entry)),
                Err(e) => out[*i] = Some(Err(e)),
            }
        }
        let stores: Vec<_> = built.iter().filter_map(|(_, c, entry)| Some((c.library().persistable().ok()?, entry.clone()?))).collect();
        if !stores.is_empty() {
            cache.store_many(stores);
        }
        for (i, c, _) in built {
            let r = &requests[i];
            out[i] = Some(Ok(r.kernel.memoize(&options[i], &r.spec, c)));
        }
        out.into_iter().map(|o| o.unwrap_or_else(|| Err(crate::Error::Config("a compile request was lost".into())))).collect()
    }
}

impl Jit {
    /// [`CompiledKernel::assemble_cubin`] for several kernels, keyed under this JIT's toolchain
    /// and salt and through its cache: ptxas found once, every cubin looked up together (one
    /// round trip to a remote cache) and the ones ptxas assembled stored together. In the
    /// kernels' order; without ptxas, that error for each kernel that needs it.
    pub fn assemble_cubins(&self, kernels: &[&CompiledKernel]) -> Vec<Result<Vec<u8>>> {
        match super::compiled::find_ptxas() {
            Ok(ptxas) => super::compiled::assemble_cubins(Some(self), &ptxas, kernels),
            Err(first) => {
                let mut first = Some(first);
                kernels.iter().map(|_| Err(first.take().unwrap_or_else(|| crate::Error::Config("no usable ptxas".into())))).collect()
            }
        }
    }
}

impl Module {
    /// Compiles every kernel [`kernels_to_compile`](Self::kernels_to_compile) lists (the
    /// `#[kernel]` functions, and the instances of generic kernels whose every instance is
    /// known) for `target`, array parameters C-contiguous, through [`Jit::compile_many`]: one
    /// pass over the cache for the whole file. In that list's order; the first error if any
    /// kernel fails to check or compile.
    pub fn compile_all(&self, target: Target) -> Result<Vec<Arc<CompiledKernel>>> {
        let names = self.kernels_to_compile()?.names;
        let requests = names.iter().map(|n| Ok(CompileRequest::new(&self.kernel(n)?, target))).collect::<Result<Vec<_>>>()?;
        self.jit.compile_many(&requests).into_iter().collect()
    }
}
