#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| scalechain_consensus::fuzz::decode_undo(data));
