//! Any bytes as a cache entry, a serialised kernel and an archive header: rejected or decoded,
//! never a panic; a decoded entry re-encodes to the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

use kache::cache::envelope;

fuzz_target!(|data: &[u8]| {
    if let Ok((meta, payload)) = envelope::decode(data, None) {
        assert_eq!(envelope::encode(&meta, payload), data);
    }
    let _ = kache::CompiledKernel::deserialize(data);
});
