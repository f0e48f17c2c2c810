//! Any bytes through parse, check and code generation (host and NVPTX): Ok or a typed error,
//! never a panic or an abort inside LLVM. Only kernels that check reach LLVM.
#![no_main]
use libfuzzer_sys::fuzz_target;

use kache::{Arch, Config, Jit, Layout, Specialization, Target};

fuzz_target!(|data: &[u8]| {
    let Ok(jit) = Jit::new(Config::in_memory()) else { return };
    let Ok(m) = jit.load_bytes("fuzz.rs", data) else { return };
    for name in m.kernel_names().into_iter().take(4) {
        let Ok(k) = m.kernel(&name) else { continue };
        for target in [Target::Host, Target::Nvptx(Arch { sm: 70, accelerated: false })] {
            let _ = k.compile(target, &Specialization::uniform(k.program(), Layout::C));
        }
    }
});
