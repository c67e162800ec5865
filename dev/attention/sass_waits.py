"""sass_waits.py LIB [REGEX]: where the sm90a prefill kernels wait for their P V products, from the
SASS of an attention library (run on the GPU machine: needs cuobjdump, which this CPU machine
lacks). For each attention_fwd_sm90_kernel instance whose name matches REGEX (default: every one),
each steady-state `WARPGROUP.DEPBAR.LE gsb0, 0x1` (S of the next block done) with the instructions
up to the next `gsb0, 0x0` (P V done) and how many of them are the softmax's exp2 (MUFU.EX2):
where the softmax overlaps P V, most of its MUFU.EX2 fall in between. ptxas may hoist the wait
(cuda/NOTES.md, FP8 prefill: it sat right after the mask branch's join, before the softmax).
  python3 dev/attention/sass_waits.py build/attention/libkh_attention_cuda.so Fp8Operands
"""
import re
import subprocess
import sys


def kernels(lib):
    """(name, instructions) of each function in LIB's SASS, as cuobjdump prints them (streamed: a
    whole library's SASS takes cuobjdump most of a minute, and the caller prints as it goes)."""
    with subprocess.Popen(["cuobjdump", "-sass", lib], stdout=subprocess.PIPE, text=True) as proc:
        name, code = None, []
        for line in proc.stdout:
            m = re.search(r"Function : (\S+)", line)
            if m:
                if name:
                    yield name, code
                name, code = m.group(1), []
            elif name and re.search(r"/\*[0-9a-f]{4,}\*/", line):
                code.append(line.split(";")[0].split("*/", 1)[1].strip())
        if name:
            yield name, code
    if proc.returncode:
        sys.exit(f"cuobjdump -sass {lib} failed ({proc.returncode})")


def label_of(name):
    """d, operands, causal and mode from a kernel instance's mangled name (16-bit operands are the
    element type itself, `13__nv_bfloat16Lb0`; FP8 ones `NS0_11Fp8OperandsI...EELb0`); None for a
    function ptxas kept out of line (its name: `$` + the kernel's + `$` + its own)."""
    if name.startswith("$"):
        return None
    args = re.search(r"kernelILi(\d+)ELi(\d+)E(.*?)Lb([01])ELNS0_8Sm90ModeE(\d)", name)
    if not args:
        return None
    return f"d{args.group(1)} {'fp8' if 'Fp8' in args.group(3) else '16-bit'} causal{args.group(4)} mode{args.group(5)}"


def main():
    lib = sys.argv[1]
    pattern = re.compile(sys.argv[2] if len(sys.argv) > 2 else ".")
    for name, code in kernels(lib):
        if "attention_fwd_sm90_kernel" not in name or not pattern.search(name):
            continue
        label = label_of(name)
        waits = [i for i, ins in enumerate(code) if "DEPBAR.LE gsb0, 0x1" in ins]
        if label is None:  # an out-of-line function: of interest only if the loop's waits went there
            if not waits:
                continue
            label = f"(out of line) {name[:160]}"
        if not waits:
            print(f"{label}: no wait<1> in {len(code)} instructions", flush=True)
        for i in waits:
            j = next((k for k in range(i + 1, len(code)) if "DEPBAR.LE gsb0, 0x0" in code[k]), len(code))
            between = code[i + 1:j]
            mufu = sum("MUFU.EX2" in x for x in between)
            after = sum("MUFU.EX2" in x for x in code[j + 1:j + 400])
            print(f"{label}: wait<1> at {i}, wait<0> {j - i} instructions later, MUFU.EX2 between {mufu}, "
                  f"in the 400 after {after}", flush=True)


if __name__ == "__main__":
    main()
