//! Reading and cutting ELF64 (little-endian) files by hand, to make libraries that are cut
//! short yet whose headers still parse: an oracle independent of the `object` crate, which
//! the host's completeness check uses.

/// Where the last loadable segment (`PT_LOAD`) of `elf` ends, in bytes from the start.
pub fn segments_end(elf: &[u8]) -> usize {
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap()) as usize;
    let (phoff, phentsize, phnum) = (u64_at(0x20), u16_at(0x36), u16_at(0x38));
    (0..phnum)
        .map(|i| phoff + i * phentsize)
        .filter(|&ph| u32::from_le_bytes(elf[ph..ph + 4].try_into().unwrap()) == 1)
        .map(|ph| u64_at(ph + 8) + u64_at(ph + 0x20))
        .max()
        .expect("a PT_LOAD segment")
}

/// `elf` without its section header table (which sits at the end of the file): cut
/// anywhere, its headers still parse, so only a segment-range check can tell.
pub fn without_section_headers(mut elf: Vec<u8>) -> Vec<u8> {
    assert_eq!(&elf[..4], b"\x7fELF");
    assert_eq!(elf[4], 2, "ELF64");
    elf[0x28..0x30].fill(0); // e_shoff
    elf[0x3c..0x40].fill(0); // e_shnum, e_shstrndx
    elf
}

/// `elf` without its section header table, cut one byte before its last loadable segment
/// ends: a library truncated mid-write that only the segment-range check refuses.
pub fn cut_inside_segments(elf: &[u8]) -> Vec<u8> {
    let mut cut = without_section_headers(elf.to_vec());
    cut.truncate(segments_end(&cut) - 1);
    cut
}
