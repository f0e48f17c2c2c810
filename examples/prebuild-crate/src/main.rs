//! Runs the crate's prebuilt kernels on the best device (a GPU if there is one, else the host
//! backend) and checks them.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let device = kache::Device::best();
    prebuild_demo::run_all(&device)?;
    println!("prebuilt kernels ran on {}: ok (PTX for {:?})", device.describe(), prebuild_demo::saxpy::prebuilt::saxpy().archs());
    Ok(())
}
