//! Stock zlib (built from `libz-sys`'s bundled source, no system package), the reference
//! packager's encoder through Python's `zipfile`: what `dist/` is measured against.
//!
//! Owns: one chunk through zlib's raw deflate. Does not own: chunking (`floor`).

use std::mem::MaybeUninit;

use anyhow::Context;

/// Bytes `input` deflates to as one piece of a stream: primed with `dictionary` (the 32 KiB
/// before it in the file), ended with a sync flush unless it is the file's `last` piece.
pub fn deflate_len(input: &[u8], dictionary: &[u8], level: u32, last: bool) -> anyhow::Result<u64> {
    let mut storage = MaybeUninit::<libz_sys::z_stream>::zeroed();
    let stream = storage.as_mut_ptr();
    let stream_size = std::mem::size_of::<libz_sys::z_stream>() as i32;
    // SAFETY: zlib initialises the zeroed stream (zalloc, zfree and opaque null mean its
    // own allocator); it is used only through this pointer and ended below.
    let init = unsafe {
        libz_sys::deflateInit2_(
            stream,
            level as i32,
            libz_sys::Z_DEFLATED,
            -15,
            8,
            libz_sys::Z_DEFAULT_STRATEGY,
            libz_sys::zlibVersion(),
            stream_size,
        )
    };
    anyhow::ensure!(init == libz_sys::Z_OK, "zlib deflateInit2 failed: {init}");
    let result = run(stream, input, dictionary, last);
    // SAFETY: the stream was initialised above.
    unsafe { libz_sys::deflateEnd(stream) };
    result
}

fn run(stream: *mut libz_sys::z_stream, input: &[u8], dictionary: &[u8], last: bool) -> anyhow::Result<u64> {
    // SAFETY: `stream` is initialised; the dictionary, input and output outlive the calls,
    // and their lengths fit zlib's 32-bit counts (chunks are 1 MiB).
    unsafe {
        if !dictionary.is_empty() {
            let set = libz_sys::deflateSetDictionary(stream, dictionary.as_ptr(), dictionary.len() as u32);
            anyhow::ensure!(set == libz_sys::Z_OK, "zlib deflateSetDictionary failed: {set}");
        }
        let bound = libz_sys::deflateBound(stream, input.len() as libz_sys::uLong) as usize + 64;
        let mut out = vec![0u8; bound];
        (*stream).next_in = input.as_ptr() as *mut u8;
        (*stream).avail_in = u32::try_from(input.len()).context("a chunk too large for zlib")?;
        (*stream).next_out = out.as_mut_ptr();
        (*stream).avail_out = u32::try_from(out.len()).context("a chunk too large for zlib")?;
        let flush = if last { libz_sys::Z_FINISH } else { libz_sys::Z_SYNC_FLUSH };
        let status = libz_sys::deflate(stream, flush);
        anyhow::ensure!(
            (last && status == libz_sys::Z_STREAM_END) || (!last && status == libz_sys::Z_OK),
            "zlib deflate failed: {status}"
        );
        Ok((bound - (*stream).avail_out as usize) as u64)
    }
}
