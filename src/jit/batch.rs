//! Compiling several kernels together ([`Jit::compile_many`], [`Module::compile_all`],
//! [`Jit::assemble_cubins`]): every key is looked up in one pass over the cache's tiers (one
//! round trip to a remote cache), the misses are compiled on up to
//! [`Config::compile_threads`](crate::Config::compile_threads) threads, and their entries stored
//! together (one more round trip). This is how the `kache` command compiles a file and how the prebuild
//! step compiles a kernel file.

use std::sync::Arc;

use super::Jit;
use super::compiled::CompiledKernel;
use super::kernel::{Kernel, Prepared};
use super::module::Module;
use crate::cache::{Entry, Lookup};
use crate::error::Result;
use crate::ir::Layout;
use crate::runtime::Device;
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
    /// one, but looking every key up in one pass over the cache's tiers, compiling the misses
    /// on up to [`Config::compile_threads`](crate::Config::compile_threads) threads, and storing
    /// the compiled entries together: with a remote cache, one round trip for the lookups and
    /// one for the stores. The results are in the order of the requests, and the same (bytes,
    /// keys, errors) whatever the number of threads; one failing does not stop the others.
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
        let mut misses: Vec<&(usize, Prepared)> = Vec::new();
        for (job, lookup) in pending.iter().zip(found.into_iter().chain(std::iter::repeat_with(|| Lookup::Miss))) {
            let (i, prepared) = job;
            let r = &requests[*i];
            match r.kernel.take_hit(r.target, &r.spec, prepared, lookup, options[*i].checked, options[*i].may_alias) {
                Some(c) => out[*i] = Some(Ok(r.kernel.memoize(&options[*i], &r.spec, c))),
                None => misses.push(job),
            }
        }
        // The misses compiled on several threads (each compile on one, with its own LLVM
        // context), their results in the requests' order whatever the threads did.
        // A compile that panicked (a bug in kache) is that request's error, whichever thread
        // ran it.
        let builds = crate::parallel::map(self.config().compile_threads, &misses, |(i, prepared)| {
            let r = &requests[*i];
            r.kernel.build(&options[*i], &r.spec, prepared)
        });
        let mut built: Vec<(usize, Arc<CompiledKernel>, Option<Entry>)> = Vec::new();
        for ((i, _), b) in misses.iter().zip(builds) {
            let b = b.unwrap_or_else(|panic| {
                let r = &requests[*i];
                Err(crate::Error::Internal(format!("compiling kernel '{}' for {} panicked: {panic}", r.kernel.name(), r.target)))
            });
            match b {
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

impl From<&Device> for Target {
    /// What code for `device` is compiled for.
    fn from(device: &Device) -> Target {
        device.target()
    }
}

impl Module {
    /// Compiles every kernel [`kernels_to_compile`](Self::kernels_to_compile) lists (the
    /// `#[kernel]` functions, and the instances of generic kernels whose every instance is
    /// known) for a target or a device's target, array parameters C-contiguous, through
    /// [`Jit::compile_many`]: one pass over the cache for the whole file, the misses compiled
    /// on several threads. In that list's order; the first error, in that order, if any kernel
    /// fails to check or compile.
    ///
    /// ```
    /// let jit = kache::Jit::new(kache::Config::in_memory())?;
    /// let m = jit.load_source("two.rs", "#[kernel] pub fn a(x: &mut [f32]) { x[0] = 1.0; }\n\
    ///                                    #[kernel] pub fn b(x: &mut [f32]) { x[0] = 2.0; }")?;
    /// let compiled = m.compile_all(&kache::Device::host())?;
    /// assert_eq!(compiled.iter().map(|c| c.name()).collect::<Vec<_>>(), ["a", "b"]);
    /// # Ok::<(), kache::Error>(())
    /// ```
    pub fn compile_all(&self, on: impl Into<Target>) -> Result<Vec<Arc<CompiledKernel>>> {
        let target = on.into();
        let names = self.kernels_to_compile()?.names;
        let requests = names.iter().map(|n| Ok(CompileRequest::new(&self.kernel(n)?, target))).collect::<Result<Vec<_>>>()?;
        self.jit.compile_many(&requests).into_iter().collect()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use crate::{CompileRequest, Config, Error, Jit, Target};

    /// A stand-in for a bug in code generation: compiling a kernel whose name starts with
    /// `test_panics_` panics (in unit tests only).
    pub(in crate::jit) fn panic_if_asked(kernel: &str) {
        if kernel.starts_with("test_panics_") {
            panic!("asked to panic while compiling '{kernel}'");
        }
    }

    /// A compile that panics on one of the batch's threads is that request's `Error::Internal`,
    /// naming the kernel, on one thread or many; the batch's other kernels compile and are
    /// stored, nothing hangs, and the JIT goes on working (the kernel fails the same way again).
    #[test]
    fn a_compile_that_panics_is_its_requests_error() {
        let mut src = String::new();
        for i in 0..8 {
            let name = if i == 5 { "test_panics_k5".to_string() } else { format!("k{i}") };
            src.push_str(&format!("#[kernel] pub fn {name}(x: &mut [f32]) {{ x[0] = {i}.0; }}\n"));
        }
        for threads in [1, 4] {
            let dir = tempfile::tempdir().unwrap();
            let jit = Jit::new(Config::in_memory().with_cache_dir(dir.path()).compile_threads(threads)).unwrap();
            let m = jit.load_source("p.rs", &src).unwrap();
            let requests: Vec<CompileRequest> =
                m.kernel_names().iter().map(|n| CompileRequest::new(&m.kernel(n).unwrap(), Target::Host)).collect();
            for round in 0..2 {
                let results = jit.compile_many(&requests);
                assert_eq!(results.len(), 8);
                for (r, req) in results.iter().zip(&requests) {
                    match r {
                        Err(Error::Internal(msg)) if req.kernel.name() == "test_panics_k5" => {
                            assert!(msg.contains("compiling kernel 'test_panics_k5' for host panicked: asked to panic"), "{msg}")
                        }
                        Ok(c) => assert_eq!(c.name(), req.kernel.name()),
                        other => panic!("{threads} threads, round {round}, '{}': {:?}", req.kernel.name(), other.as_ref().err()),
                    }
                }
            }
            let e = m.compile_all(Target::Host).unwrap_err();
            assert!(matches!(e, Error::Internal(_)), "{e}");
            drop((m, requests));
            assert_eq!(jit.cache().stats().entries, 7, "{threads} threads: every other kernel stored");
        }
    }
}
