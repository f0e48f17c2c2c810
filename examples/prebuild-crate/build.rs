//! The crate's build script: compiles `kernels/` for sm_80 and sm_90 with `kache::prebuild`,
//! binding the host globals the kernels read, and `kernels-sm90/` for sm_90 alone.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    kache::prebuild::Builder::new()
        .kernels_dir("kernels")
        .arch("sm_80")
        .arch("sm_90")
        .global("GAIN", 2.0f32)
        .global("TAPS", vec![0.25f32, 0.5, 0.25])
        .instances("scale", ["f32", "i64"])
        .build()?;
    // Kernels that need sm_90 (tensor copies), built for it alone into a file of their own.
    kache::prebuild::Builder::new().kernels_dir("kernels-sm90").arch("sm_90").out_file("kache_kernels_sm90.rs").build()?;
    Ok(())
}
