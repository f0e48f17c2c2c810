//! Running code kache cannot check, or code without bounds checks, takes `unsafe`.
use kache::{CompiledKernel, Device, Grid, Kernel, Target};

fn runs(k: &Kernel, c: &CompiledKernel, dev: &Device, bytes: &[u8]) {
    let mut y = dev.alloc::<f32>(&[4]).unwrap();
    let _ = k.launch_unchecked(dev, Grid::linear(4, 4), (&mut y,));
    let _ = c.launch_unchecked(dev, Grid::linear(4, 4), (&mut y,));
    let _ = CompiledKernel::deserialize(bytes);
    let _ = k.with_cubin(kache::Arch::parse("sm_90").unwrap(), bytes.to_vec());
    let _ = k.with_ptx(Target::Host, c.spec(), String::new());
    let _ = kache::prebuild::Prebuilt::new(kache::prebuild::KernelData {
        name: "k",
        file: "k.rs",
        source: "",
        modules: &[],
        params: &[],
        enums: &[],
        entry: "k",
        ptx: &[("sm_90", "// any PTX")],
        cubins: &[],
        host: None,
        globals: &[],
        tensor_maps: &[],
    });
}

fn main() {}
