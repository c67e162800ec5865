#!/usr/bin/env python3
"""The registry's role folders are boundaries (issue 40): every quoted #include in
registry/<role>/ names a header of its own src/, or a public header (include/) of its own role
or of a role below it, or one outside the registry. The per-role libraries already make most
violations compile errors (another role's src/ and the roles above are on no include path);
this also catches what the compiler cannot: a relative path into another folder ("../"), and
headers no source includes yet.

usage: check_role_includes.py REGISTRY_DIR ROLE... (the roles bottom-up, as registry/CMakeLists.txt
defines them)
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    roles = sys.argv[2:]
    rank = {role: i for i, role in enumerate(roles)}
    on_disk = sorted(p.name for p in root.iterdir() if p.is_dir())
    if on_disk != sorted(roles):
        print(f"role folders {on_disk} differ from the roles the build defines {roles}")
        return 1
    owner = {}  # "kh/registry/x.hpp" -> the role whose include/ holds it
    for role in roles:
        for header in (root / role / "include").rglob("*"):
            if header.is_file():
                owner[header.relative_to(root / role / "include").as_posix()] = role
    problems = []
    for role in roles:
        for path in sorted((root / role).rglob("*")):
            if not path.is_file() or path.suffix not in (".cpp", ".hpp", ".inl", ".h"):
                continue
            private = (root / role / "src") in path.parents
            where = path.relative_to(root.parent).as_posix()
            for name in INCLUDE.findall(path.read_text(encoding="utf-8")):
                if ".." in pathlib.PurePosixPath(name).parts:
                    problems.append(f"{where}: \"{name}\" reaches out by a relative path")
                elif name.startswith("kh/registry/"):
                    home = owner.get(name)
                    if home is None:
                        problems.append(f"{where}: \"{name}\" is no role's public header")
                    elif rank[home] > rank[role]:
                        problems.append(f"{where}: \"{name}\" belongs to {home}, above {role}")
                elif name.startswith("kh/"):
                    continue  # outside the registry: abi/, platform/
                elif not private:
                    problems.append(f"{where}: a public header includes \"{name}\", which is not public")
                elif not (root / role / "src" / name).is_file():
                    problems.append(f"{where}: \"{name}\" is not in {role}/src (another role's sources are private)")
    for p in problems:
        print(p)
    print(f"{len(problems)} include(s) cross a role boundary" if problems else "every role includes only what it may")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
