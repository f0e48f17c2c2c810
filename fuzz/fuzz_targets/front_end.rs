//! Any bytes through the front end: parse and check give Ok or diagnostics, never a panic,
//! a stack overflow or an abort.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = kache::lang::parse_bytes("fuzz.rs", data) {
        let _ = kache::lang::check_module(&m, &kache::lang::Env::default());
        for k in m.kernel_names() {
            let _ = kache::lang::check_kernel(&m, &kache::lang::Env::default(), &k);
        }
    }
});
