"""kh_elf: what the wheel builder reads from ELF shared objects (64-bit, little-endian): the
dynamic section's DT_NEEDED, DT_SONAME, DT_RUNPATH/DT_RPATH, and the versions each needed
library must provide (.gnu.version_r: GLIBC_2.34, GLIBCXX_3.4.30, ...). Standard library only.
"""
import struct

SHT_DYNAMIC = 6
SHT_GNU_VERNEED = 0x6FFFFFFE
DT_NULL, DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 14, 15, 29


class ElfInfo:
    """needed: [soname]; soname: str or None; runpath: str or None (DT_RUNPATH, else DT_RPATH);
    versions: {needed soname: {version name}}."""

    def __init__(self):
        self.needed = []
        self.soname = None
        self.runpath = None
        self.versions = {}


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def _cstr(data, offset):
    end = data.index(b"\0", offset)
    return data[offset:end].decode("utf-8", "replace")


def read(path):
    """The ElfInfo of the ELF file at path; ValueError if it is not a 64-bit little-endian ELF."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = []
    for i in range(shnum):
        # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info, sh_addralign, sh_entsize
        sections.append(struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize))
    info = ElfInfo()
    rpath = None
    for sec in sections:
        kind, offset, size, link = sec[1], sec[4], sec[5], sec[6]
        strtab = sections[link][4]
        if kind == SHT_DYNAMIC:
            for pos in range(offset, offset + size, 16):
                tag, val = struct.unpack_from("<qQ", data, pos)
                if tag == DT_NULL:
                    break
                if tag == DT_NEEDED:
                    info.needed.append(_cstr(data, strtab + val))
                elif tag == DT_SONAME:
                    info.soname = _cstr(data, strtab + val)
                elif tag == DT_RUNPATH:
                    info.runpath = _cstr(data, strtab + val)
                elif tag == DT_RPATH:
                    rpath = _cstr(data, strtab + val)
        elif kind == SHT_GNU_VERNEED:
            pos = offset
            while True:
                # Elf64_Verneed: vn_version, vn_cnt, vn_file, vn_aux, vn_next
                _, count, file_name, aux, next_entry = struct.unpack_from("<HHIII", data, pos)
                names = info.versions.setdefault(_cstr(data, strtab + file_name), set())
                apos = pos + aux
                for _ in range(count):
                    # Elf64_Vernaux: vna_hash, vna_flags, vna_other, vna_name, vna_next
                    _, _, _, name, anext = struct.unpack_from("<IHHII", data, apos)
                    names.add(_cstr(data, strtab + name))
                    apos += anext
                if not next_entry:
                    break
                pos += next_entry
    if info.runpath is None:
        info.runpath = rpath
    return info


def version_tuple(name):
    """("GLIBC", (2, 34)) of "GLIBC_2.34"; None for names without a dotted number (GLIBC_PRIVATE)."""
    prefix, _, number = name.rpartition("_")
    try:
        return prefix, tuple(int(p) for p in number.split("."))
    except ValueError:
        return None
