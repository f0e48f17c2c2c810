//! The code generator: from the compiled kernels of a crate to the Rust file that the crate
//! includes (a module per kernel file, a launch function and a `prebuilt` accessor per kernel),
//! built with `quote!` and formatted with prettyplease.
//!
//! Every name comes from [`super::names`], and each generated helper lives in a namespace that
//! no kernel, module or parameter name can reach: launch functions (the kernels' names) are
//! alone in the value namespace of their module, whose type namespace holds only `prebuilt`;
//! `prebuilt` holds the accessors (the kernels' names again) beside the module `source`; the
//! one item at the include site, `KACHE_GLOBALS`, is a value, and kernel files become modules.

use proc_macro2::TokenStream;
use proc_macro2::{Ident, Span};
use quote::quote;

use super::names::{ident, launch_params};
use crate::capture::CaptureValue;
use crate::error::{Error, Result};
use crate::ir::{EnumDef, Layout, Scalar, ScalarValue, TuneExpr, TuneSpace, Ty};

/// A kernel to generate a launch function for.
pub(crate) struct GenKernel {
    /// Its name in the kernel language.
    pub(crate) name: String,
    /// Its Rust name ([`super::names::rust_name`], unique in its file).
    pub(crate) rust: String,
    /// Its parameters.
    pub(crate) signature: Vec<(String, Ty)>,
    /// The tensor maps its parameters take: each one's aggregate id in the signature and its
    /// type's name (the generated code numbers them from 0, in this order).
    pub(crate) tensor_maps: Vec<(u32, String)>,
    /// The enums of its parameters' types, by [`EnumTy::id`](crate::ir::EnumTy).
    pub(crate) enums: Vec<EnumDef>,
    /// The symbol of its entry in the PTX and cubins.
    pub(crate) entry: String,
    /// `(architecture, PTX file)` for each architecture.
    pub(crate) ptx: Vec<(String, String)>,
    /// `(architecture, cubin file)` for each architecture assembled with ptxas.
    pub(crate) cubins: Vec<(String, String)>,
    /// Its host object code, if the step made some.
    pub(crate) host: Option<GenHost>,
    /// A kernel that is not generic but tuned (`#[tune]` over its launch shape): launched only
    /// through its tuned function, which takes its name; its accessor is that function's own.
    pub(crate) tuned_only: bool,
}

/// A kernel's host object code, linked into the crate.
pub(crate) struct GenHost {
    /// The entry's symbol.
    pub(crate) symbol: String,
    /// Bytes of static shared memory per block.
    pub(crate) static_shared: u64,
    /// Whether it synchronises the threads of a block.
    pub(crate) cooperative: bool,
    /// Bytes of stack one kernel thread may use.
    pub(crate) stack: u64,
}

/// A kernel declared with `#[tune(..)]`: a launch function without a grid, which picks among
/// its candidates (kernels of the same file, each with its own [`GenKernel`]).
pub(crate) struct GenTuned {
    /// Its name in the kernel language.
    pub(crate) name: String,
    /// Its Rust name (no candidate instance has it: an instance's name carries its arguments).
    pub(crate) rust: String,
    /// Its parameters, with concrete types (a candidate's).
    pub(crate) signature: Vec<(String, Ty)>,
    /// Its tuning space.
    pub(crate) space: TuneSpace,
    /// Each candidate's configuration and the Rust name of the kernel it runs.
    pub(crate) candidates: Vec<(Vec<u64>, String)>,
    /// The tuning results found in the cache: device, multiprocessors, compute capability,
    /// driver, key values, chosen candidate.
    pub(crate) results: Vec<GenResult>,
}

/// A tuning result recorded in generated code.
pub(crate) struct GenResult {
    pub(crate) device: String,
    pub(crate) multiprocessors: u32,
    pub(crate) compute_capability: Option<(i32, i32)>,
    pub(crate) driver: Option<i32>,
    pub(crate) bucket: Vec<u64>,
    pub(crate) chosen: usize,
}

/// A kernel file, which becomes a module.
pub(crate) struct GenModule {
    /// The module's Rust name (unique among the crate's kernel files).
    pub(crate) rust: String,
    /// The source file, for `include_str!`.
    pub(crate) source: String,
    /// The module files it includes: path relative to its folder, and the file for
    /// `include_str!`.
    pub(crate) modules: Vec<(String, String)>,
    /// The file as the documentation shows it (relative to the crate).
    pub(crate) shown: String,
    /// The file's name, for diagnostics at run time.
    pub(crate) file: String,
    /// Its kernels.
    pub(crate) kernels: Vec<GenKernel>,
    /// Its `#[tune]` kernels.
    pub(crate) tuned: Vec<GenTuned>,
}

/// A host value bound for every kernel file.
pub(crate) struct GenGlobal<'a> {
    /// Its name in the kernels.
    pub(crate) name: &'a str,
    /// Its value.
    pub(crate) value: &'a CaptureValue,
    /// For arrays, the file that holds the elements' bytes, for `include_bytes!`.
    pub(crate) bytes_file: Option<String>,
}

/// The generated file's text.
pub(crate) fn generate(modules: &[GenModule], globals: &[GenGlobal<'_>]) -> Result<String> {
    let globals = globals.iter().map(global).collect::<Result<Vec<_>>>()?;
    let modules = modules.iter().map(module).collect::<Result<Vec<_>>>()?;
    let tokens = quote! {
        #[allow(dead_code)]
        const KACHE_GLOBALS: ::kache::prebuild::Globals = &[#(#globals),*];
        #(#modules)*
    };
    let file = syn::parse2::<syn::File>(tokens).map_err(|e| Error::Internal(format!("generated code does not parse: {e}")))?;
    Ok(format!("// @generated by kache::prebuild from the crate's kernels; do not edit.\n{}", prettyplease::unparse(&file)))
}

fn global(g: &GenGlobal<'_>) -> Result<TokenStream> {
    let name = g.name;
    let value = match (g.value, &g.bytes_file) {
        (CaptureValue::Scalar(ScalarValue::Bool(b)), _) => quote!(::kache::prebuild::Global::Bool(#b)),
        (CaptureValue::Scalar(ScalarValue::Int(t, bits)), _) => {
            let t = scalar_variant(*t);
            quote!(::kache::prebuild::Global::Int(::kache::Scalar::#t, #bits))
        }
        (CaptureValue::Scalar(ScalarValue::F32(x)), _) => {
            let bits = x.to_bits();
            quote!(::kache::prebuild::Global::f32_from_bits(#bits))
        }
        (CaptureValue::Scalar(ScalarValue::F64(x)), _) => {
            let bits = x.to_bits();
            quote!(::kache::prebuild::Global::f64_from_bits(#bits))
        }
        (CaptureValue::Scalar(v @ (ScalarValue::F16(_) | ScalarValue::Bf16(_))), _) => {
            let t = scalar_variant(v.ty());
            let bits = v.bits() as u16;
            quote!(::kache::prebuild::Global::Float16(::kache::Scalar::#t, #bits))
        }
        (CaptureValue::Host(h), Some(path)) => {
            let elem = scalar_variant(h.elem);
            let shape = &h.shape;
            let fortran = h.layout == Layout::F;
            quote!(::kache::prebuild::Global::Array {
                elem: ::kache::Scalar::#elem,
                shape: &[#(#shape),*],
                fortran: #fortran,
                bytes: include_bytes!(#path),
            })
        }
        _ => return Err(Error::Internal(format!("global '{name}' cannot be embedded"))),
    };
    Ok(quote!((#name, #value)))
}

fn module(m: &GenModule) -> Result<TokenStream> {
    let name = ident(&m.rust);
    let doc = format!(" Kernels of {}.", code(&m.shown));
    let prebuilt_doc = format!(
        " The kernels of {}, prebuilt: one function per kernel, for launching with any arguments \
         (`kache::KernelArgs`: foreign arrays, say).",
        code(&m.file)
    );
    let plain = m.kernels.iter().filter(|k| !k.tuned_only);
    let mut launches = plain.clone().map(|k| launch(m, k)).collect::<Result<Vec<_>>>()?;
    let mut accessors = plain.map(|k| accessor(m, k, &k.rust)).collect::<Result<Vec<_>>>()?;
    for t in &m.tuned {
        launches.push(tuned_launch(m, t)?);
        accessors.push(tuned_accessor(m, t)?);
    }
    let source = &m.source;
    let module_files = m.modules.iter().map(|(rel, path)| quote!((#rel, include_str!(#path))));
    Ok(quote! {
        #[doc = #doc]
        #[allow(dead_code, non_snake_case, unreachable_pub, clippy::all, clippy::pedantic, clippy::nursery)]
        pub mod #name {
            #(#launches)*
            #[doc = #prebuilt_doc]
            pub mod prebuilt {
                #(#accessors)*
                mod source {
                    pub(super) const TEXT: &str = include_str!(#source);
                    pub(super) const MODULES: &[(&str, &str)] = &[#(#module_files),*];
                }
            }
        }
    })
}

fn launch(m: &GenModule, k: &GenKernel) -> Result<TokenStream> {
    let kernel_params: Vec<&str> = k.signature.iter().map(|(n, _)| n.as_str()).collect();
    let names = launch_params(&kernel_params);
    let function = ident(&k.rust);
    let (device, grid) = (ident(&names.device), ident(&names.grid));
    let params: Vec<_> = names.params.iter().map(|p| ident(p)).collect();
    let types = k.signature.iter().map(|(_, t)| rust_type(t, &k.tensor_maps)).collect::<Result<Vec<_>>>()?;
    let shown = |t: &Ty| match tensor_map_index(t, &k.tensor_maps) {
        Some(i) => format!("&{}", k.tensor_maps[i].1),
        None => t.to_string(),
    };
    let signature = format!("{}({})", k.name, k.signature.iter().map(|(n, t)| format!("{n}: {}", shown(t))).collect::<Vec<_>>().join(", "));
    let doc = format!(" Launches kernel {} of {} on {}.", code(&signature), code(&m.file), code(&names.device));
    Ok(quote! {
        #[doc = #doc]
        pub fn #function(#device: &::kache::Device, #grid: ::kache::Grid #(, #params: #types)*) -> ::kache::Result<()> {
            prebuilt::#function().launch_with(#device, #grid, &[#(&#params),*])
        }
    })
}

/// The accessor `function` of kernel `k`'s [`Prebuilt`](crate::prebuild::Prebuilt).
fn accessor(m: &GenModule, k: &GenKernel, function: &str) -> Result<TokenStream> {
    let function = ident(function);
    let (name, file, entry) = (&k.name, &m.file, &k.entry);
    let ptx = k.ptx.iter().map(|(arch, path)| quote!((#arch, include_str!(#path))));
    let cubins = k.cubins.iter().map(|(arch, path)| quote!((#arch, include_bytes!(#path))));
    let enums = k.enums.iter().map(|e| {
        let (name, repr) = (&e.name, scalar_variant(e.repr));
        let variants = e.variants.iter().map(|(n, d)| quote!((#n, #d)));
        quote!(::kache::prebuild::EnumData { name: #name, repr: ::kache::Scalar::#repr, variants: &[#(#variants),*] })
    });
    let params = k
        .signature
        .iter()
        .map(|(n, t)| {
            let ty = param_type(t, &k.tensor_maps)?;
            Ok(quote!((#n, #ty)))
        })
        .collect::<Result<Vec<_>>>()?;
    let tensor_maps = k.tensor_maps.iter().map(|(_, name)| quote!(#name));
    // Full paths: a kernel named `Some` or `None` has an accessor of that name in this module.
    let host = match &k.host {
        Some(h) => {
            let symbol = Ident::new(&h.symbol, Span::call_site());
            let (shared, cooperative, stack) = (h.static_shared, h.cooperative, h.stack);
            quote!(::std::option::Option::Some(::kache::__kache_prebuilt_host_code!(#symbol, #shared, #cooperative, #stack)))
        }
        None => quote!(::std::option::Option::None),
    };
    let doc = format!(" The prebuilt kernel {}.", code(&k.name));
    Ok(quote! {
        #[doc = #doc]
        pub fn #function() -> &'static ::kache::prebuild::Prebuilt {
            static KERNEL: ::kache::prebuild::Prebuilt = ::kache::__kache_prebuilt!(::kache::prebuild::KernelData {
                name: #name,
                file: #file,
                source: source::TEXT,
                modules: source::MODULES,
                params: &[#(#params),*],
                enums: &[#(#enums),*],
                entry: #entry,
                ptx: &[#(#ptx),*],
                cubins: &[#(#cubins),*],
                host: #host,
                globals: super::super::KACHE_GLOBALS,
                tensor_maps: &[#(#tensor_maps),*],
            });
            &KERNEL
        }
    })
}

/// The launch function of a tuned kernel: its parameters, no grid.
fn tuned_launch(m: &GenModule, t: &GenTuned) -> Result<TokenStream> {
    let kernel_params: Vec<&str> = t.signature.iter().map(|(n, _)| n.as_str()).collect();
    let names = launch_params(&kernel_params);
    let function = ident(&t.rust);
    let device = ident(&names.device);
    let params: Vec<_> = names.params.iter().map(|p| ident(p)).collect();
    let types = t.signature.iter().map(|(_, ty)| rust_type(ty, &[])).collect::<Result<Vec<_>>>()?;
    let signature = format!("{}({})", t.name, t.signature.iter().map(|(n, ty)| format!("{n}: {ty}")).collect::<Vec<_>>().join(", "));
    let doc = format!(
        " Launches tuned kernel {} of {} on {} in the configuration tuned for its model and these arguments' \
         tuning key (recorded at build time, else tuned at the first such launch).",
        code(&signature),
        code(&m.file),
        code(&names.device)
    );
    Ok(quote! {
        #[doc = #doc]
        pub fn #function(#device: &::kache::Device #(, #params: #types)*) -> ::kache::Result<()> {
            prebuilt::#function().launch_with(#device, &[#(&#params),*]).map(|_| ())
        }
    })
}

/// The accessor of a tuned kernel's [`PrebuiltTuned`](crate::prebuild::PrebuiltTuned). The
/// candidates of a kernel that is not generic run the kernel itself, whose accessor is made
/// here, inside (its name is the tuned kernel's).
fn tuned_accessor(m: &GenModule, t: &GenTuned) -> Result<TokenStream> {
    let function = ident(&t.rust);
    let name = &t.name;
    let space = space_tokens(&t.space);
    let own = m.kernels.iter().find(|k| k.tuned_only && k.name == t.name);
    let untuned = match own {
        Some(k) => accessor(m, k, "untuned")?,
        None => TokenStream::new(),
    };
    let candidates = t.candidates.iter().map(|(config, rust)| {
        let accessor = if own.is_some() { ident("untuned") } else { ident(rust) };
        quote!((&[#(#config),*], #accessor as fn() -> &'static ::kache::prebuild::Prebuilt))
    });
    let results = t.results.iter().map(|r| {
        let (device, mp, chosen, bucket) = (&r.device, r.multiprocessors, r.chosen, &r.bucket);
        let cc = match r.compute_capability {
            Some((a, b)) => quote!(::std::option::Option::Some((#a, #b))),
            None => quote!(::std::option::Option::None),
        };
        let driver = match r.driver {
            Some(d) => quote!(::std::option::Option::Some(#d)),
            None => quote!(::std::option::Option::None),
        };
        quote!(::kache::prebuild::TunedResult {
            device: #device,
            multiprocessors: #mp,
            compute_capability: #cc,
            driver: #driver,
            bucket: &[#(#bucket),*],
            chosen: #chosen,
        })
    });
    let doc = format!(" The prebuilt tuned kernel {}.", code(&t.name));
    Ok(quote! {
        #[doc = #doc]
        pub fn #function() -> &'static ::kache::prebuild::PrebuiltTuned {
            #untuned
            fn space() -> ::kache::ir::TuneSpace {
                #space
            }
            static KERNEL: ::kache::prebuild::PrebuiltTuned = ::kache::prebuild::PrebuiltTuned::new(::kache::prebuild::TunedData {
                name: #name,
                space,
                candidates: &[#(#candidates),*],
                results: &[#(#results),*],
            });
            &KERNEL
        }
    })
}

/// Code that makes `s`.
fn space_tokens(s: &TuneSpace) -> TokenStream {
    let params = s.params.iter().map(|p| {
        let (name, values) = (&p.name, &p.values);
        let generic = match p.generic {
            Some(g) => quote!(::std::option::Option::Some(#g)),
            None => quote!(::std::option::Option::None),
        };
        quote!(::kache::ir::TuneParam { name: ::std::string::String::from(#name), values: ::std::vec![#(#values),*], generic: #generic })
    });
    let list = |l: &[TuneExpr]| {
        let e = l.iter().map(expr_tokens);
        quote!(::std::vec![#(#e),*])
    };
    let (require, block, grid, key) = (list(&s.require), list(&s.block), list(&s.grid), list(&s.key));
    let shared = match &s.shared_mem {
        Some(e) => {
            let e = expr_tokens(e);
            quote!(::std::option::Option::Some(#e))
        }
        None => quote!(::std::option::Option::None),
    };
    let arg_names = &s.arg_names;
    quote!(::kache::ir::TuneSpace {
        params: ::std::vec![#(#params),*],
        require: #require,
        block: #block,
        grid: #grid,
        shared_mem: #shared,
        key: #key,
        arg_names: ::std::vec![#(::std::string::String::from(#arg_names)),*],
    })
}

fn expr_tokens(e: &TuneExpr) -> TokenStream {
    match e {
        TuneExpr::Lit(v) => quote!(::kache::ir::TuneExpr::Lit(#v)),
        TuneExpr::Tuned(i) => quote!(::kache::ir::TuneExpr::Tuned(#i)),
        TuneExpr::Arg(i) => quote!(::kache::ir::TuneExpr::Arg(#i)),
        TuneExpr::Len(i) => quote!(::kache::ir::TuneExpr::Len(#i)),
        TuneExpr::Shape(i, d) => quote!(::kache::ir::TuneExpr::Shape(#i, #d)),
        TuneExpr::Unary(op, a) => {
            let op = Ident::new(&format!("{op:?}"), Span::call_site());
            let a = expr_tokens(a);
            quote!(::kache::ir::TuneExpr::Unary(::kache::ir::TuneUnary::#op, ::std::boxed::Box::new(#a)))
        }
        TuneExpr::Binary(op, a, b) => {
            let op = Ident::new(&format!("{op:?}"), Span::call_site());
            let (a, b) = (expr_tokens(a), expr_tokens(b));
            quote!(::kache::ir::TuneExpr::Binary(::kache::ir::TuneBinary::#op, ::std::boxed::Box::new(#a), ::std::boxed::Box::new(#b)))
        }
    }
}

/// Which of a kernel's tensor maps the parameter type `t` is, if it is one.
fn tensor_map_index(t: &Ty, tensor_maps: &[(u32, String)]) -> Option<usize> {
    match t {
        Ty::Agg(id) => tensor_maps.iter().position(|(m, _)| m == id),
        _ => None,
    }
}

/// A parameter's type as a constant `kache::Ty` (a tensor map's: `Ty::Agg` of its index in
/// the kernel's `tensor_maps`).
fn param_type(t: &Ty, tensor_maps: &[(u32, String)]) -> Result<TokenStream> {
    if let Some(i) = tensor_map_index(t, tensor_maps) {
        let i = i as u32;
        return Ok(quote!(::kache::Ty::Agg(#i)));
    }
    match t {
        Ty::Scalar(s) => {
            let s = scalar_variant(*s);
            Ok(quote!(::kache::Ty::Scalar(::kache::Scalar::#s)))
        }
        Ty::Array(a) => {
            let (elem, ndim, writable) = (scalar_variant(scalar_elem(a)?), a.ndim, a.writable);
            Ok(quote!(::kache::Ty::Array(::kache::ir::ArrayTy { elem: ::kache::ir::Elem::Scalar(::kache::Scalar::#elem), ndim: #ndim, writable: #writable })))
        }
        Ty::Enum(e) => {
            let (id, repr) = (e.id, scalar_variant(e.repr));
            Ok(quote!(::kache::Ty::Enum(::kache::ir::EnumTy { id: #id, repr: ::kache::Scalar::#repr })))
        }
        Ty::Agg(_) => Err(Error::Prebuild(
            "a kernel parameter is a struct or a fixed-size array passed by value, which the prebuild step does not wrap; load this kernel through the JIT (`Jit::load_file`)".into(),
        )),
        other => Err(Error::Internal(format!("a kernel parameter of type {other}"))),
    }
}

/// The element type of an array parameter the prebuild step can pass: a scalar (typed
/// wrappers for arrays of structs are not generated; such kernels load through the JIT).
fn scalar_elem(a: &crate::ir::ArrayTy) -> Result<Scalar> {
    a.elem.scalar().ok_or_else(|| {
        Error::Prebuild(
            "a kernel parameter is an array of structs, which the prebuild step does not wrap; load this kernel through the JIT (`Jit::load_file`)"
                .into(),
        )
    })
}

/// The variant of `kache::Scalar` for `s`.
fn scalar_variant(s: Scalar) -> Ident {
    Ident::new(&format!("{s:?}"), Span::call_site())
}

/// The Rust type of a kernel scalar: itself, or `half`'s type for `f16` and `bf16` (which
/// stable Rust does not have).
fn rust_scalar(s: Scalar) -> TokenStream {
    match s {
        Scalar::F16 => quote!(::kache::half::f16),
        Scalar::Bf16 => quote!(::kache::half::bf16),
        _ => {
            let s = ident(s.name());
            quote!(#s)
        }
    }
}

fn rust_type(t: &Ty, tensor_maps: &[(u32, String)]) -> Result<TokenStream> {
    if tensor_map_index(t, tensor_maps).is_some() {
        return Ok(quote!(&::kache::TensorMap));
    }
    match t {
        Ty::Scalar(s) => Ok(rust_scalar(*s)),
        // An enum argument is its discriminant, checked at launch.
        Ty::Enum(e) => Ok(rust_scalar(e.repr)),
        Ty::Array(a) => {
            let elem = rust_scalar(scalar_elem(a)?);
            Ok(if a.writable { quote!(&mut ::kache::DeviceArray<#elem>) } else { quote!(&::kache::DeviceArray<#elem>) })
        }
        Ty::Agg(_) => Err(Error::Prebuild(
            "a kernel parameter is a struct or a fixed-size array passed by value, which the prebuild step does not wrap; load this kernel through the JIT (`Jit::load_file`)".into(),
        )),
        other => Err(Error::Internal(format!("a kernel parameter of type {other}"))),
    }
}

/// `text` as a Markdown code span, whatever backticks or control characters it holds.
fn code(text: &str) -> String {
    let text: String = text.chars().map(|c| if c.is_control() { '\u{fffd}' } else { c }).collect();
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{text}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_hold_any_text() {
        assert_eq!(code("saxpy.rs"), "`saxpy.rs`");
        assert_eq!(code("a`b.rs"), "``a`b.rs``");
        assert_eq!(code("`a``"), "``` `a`` ```");
        assert_eq!(code("a\nb"), "`a\u{fffd}b`");
    }
}
