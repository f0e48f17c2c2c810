//! Tests: generic kernels and device functions.

use kache::{Arch, Device, Grid, Layout, Specialization, Target};

use crate::common;

const AXPY: &str = r#"
#[kernel]
pub fn axpy<T: Float>(a: T, x: &[T], y: &mut [T]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

fn add<U: Num>(a: U, b: U) -> U { a + b }

#[kernel]
pub fn sum_pairs<T: Num>(x: &[T], out: &mut [T]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = add(x[2 * i], x[2 * i + 1]) + T::ZERO;
    }
}
"#;

#[test]
fn smoke() {
    let jit = common::memory_jit();
    let m = jit.load_source("g.rs", AXPY).unwrap_or_else(|e| panic!("{e}"));
    m.check().unwrap_or_else(|e| panic!("{e:?}"));
    let dev = Device::host();
    let k = m.kernel("axpy").unwrap_or_else(|e| panic!("{e:?}"));
    let x = dev.upload(&[1.0f32, 2.0]).unwrap();
    let mut y = dev.upload(&[10.0f32, 20.0]).unwrap();
    k.launch(&dev, Grid::linear(2, 64), (2.0f32, &x, &mut y)).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(y.download().unwrap(), vec![12.0, 24.0]);
    let x = dev.upload(&[1.0f64, 2.0]).unwrap();
    let mut y = dev.upload(&[10.0f64, 20.0]).unwrap();
    k.launch(&dev, Grid::linear(2, 64), (2.0f64, &x, &mut y)).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(y.download().unwrap(), vec![12.0, 24.0]);
    assert_eq!(k.instances(), vec!["axpy::<f32>".to_string(), "axpy::<f64>".to_string()]);
    let s = m.kernel("sum_pairs").unwrap_or_else(|e| panic!("{e:?}"));
    let x = dev.upload(&[1u32, 2, 3, 4]).unwrap();
    let mut o = dev.alloc::<u32>(&[2]).unwrap();
    s.launch(&dev, Grid::linear(2, 64), (&x, &mut o)).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(o.download().unwrap(), vec![3, 7]);
    let e = k.launch(&dev, Grid::linear(2, 64), (2.0f32, &dev.upload(&[1.0f64]).unwrap(), &mut y)).unwrap_err();
    eprintln!("{e:?}");
    let e = m.kernel("axpy::<i32>").unwrap_err();
    eprintln!("{e}");
    if let kache::Error::Source(d) = &e {
        eprintln!("{}", d.render(false));
    }
}

/// Every instance the corpus's generic files compile (`Module::kernels_to_compile`, and the
/// named instances of kernels with const parameters) compiles for sm_70, sm_80 and sm_90, and
/// ptxas accepts each: the instances cover every scalar type, whose code differs by
/// architecture (`f16`/`bf16` natively from sm_80 and sm_90, through `f32` before).
#[test]
fn generic_corpus_instances_assemble_for_sm_70_80_and_90() {
    let ptxas = common::ptxas();
    let jit = common::memory_jit();
    let dir = common::fixture("kernels");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("kernels folder")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("generic_") && n.ends_with(".rs"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "only {} generic corpus files", files.len());
    let (mut count, mut generic_kernels, mut failures) = (0, 0, Vec::new());
    for file in &files {
        let m = jit.load_file(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        generic_kernels += m.generic_kernels().unwrap_or_else(|e| panic!("{file}: {e}")).len();
        for name in crate::corpus::compile_names(&m, file) {
            let k = m.kernel(&name).unwrap_or_else(|e| panic!("{file}: {name}: {e}"));
            assert!(!k.is_generic(), "{file}: {name} is not an instance");
            for arch in ["sm_70", "sm_80", "sm_90"] {
                count += 1;
                let target = Target::Nvptx(Arch::parse(arch).expect("supported"));
                let r = k.compile(target, &Specialization::uniform(k.program(), Layout::C)).map_err(|e| e.to_string());
                match r.and_then(|c| c.ptx().map(str::to_owned).ok_or_else(|| "no PTX".to_string())) {
                    Err(e) => failures.push(format!("{file}: {name} ({arch}): {e}")),
                    Ok(text) => {
                        assert!(text.contains(&format!(".entry {}", kache::abi::symbol_name(&name))), "{name}: no entry");
                        if let Some(p) = &ptxas
                            && let Err(e) = kache::toolchain::ptxas(p, &text, arch)
                        {
                            failures.push(format!("{file}: {name} ({arch}): ptxas rejected the PTX:\n{e}"));
                        }
                    }
                }
            }
        }
    }
    eprintln!("generic corpus: {} files, {generic_kernels} generic kernels, {count} instance compiles", files.len());
    assert!(generic_kernels >= 8, "only {generic_kernels} generic kernels in the corpus");
    assert!(failures.is_empty(), "{} of {count} failed:\n{}", failures.len(), failures.join("\n"));
}
