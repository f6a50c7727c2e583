# RUN: %python %s %uq_src

# The library table of docs/gpu-compiler.md ("Libraries and what each may
# use") against the build: every library that lib/*/CMakeLists.txt adds has
# one row, and the uq libraries a row names as its links are exactly those
# of the library's target_link_libraries calls. A link added, dropped or
# moved in CMake without the page (or the other way round) fails here.
import os
import re
import sys

src = sys.argv[1]

# add_library and target_link_libraries of every CMakeLists.txt under lib/.
libs = {}
links = {}
for root, _, files in os.walk(os.path.join(src, "lib")):
    if "CMakeLists.txt" not in files:
        continue
    path = os.path.join(root, "CMakeLists.txt")
    text = re.sub(r"#[^\n]*", "", open(path).read())
    for m in re.finditer(r"add_library\(\s*(\w+)", text):
        libs[m.group(1)] = os.path.relpath(root, src)
    for m in re.finditer(r"target_link_libraries\(\s*(\w+)([^)]*)\)", text):
        links.setdefault(m.group(1), set()).update(m.group(2).split())
assert "UQHarness" in libs and "UQKernelReport" in libs, sorted(libs)
cmake = {lib: {d for d in links.get(lib, ()) if d in libs} for lib in libs}

# The page's table: | `LIB` | `DIR` | links |.
doc = open(os.path.join(src, "docs", "gpu-compiler.md")).read()
section = doc.split("## Libraries and what each may use", 1)[1].split("\n## ", 1)[0]
rows = re.findall(r"^\| `(\w+)` \| `([^`]+)` \| ([^|]+) \|$", section, re.M)
assert rows, "no library table in docs/gpu-compiler.md"
table = {}
for lib, directory, cell in rows:
    assert lib not in table, f"{lib}: two rows"
    table[lib] = (directory, set(re.findall(r"\w+", cell)) & set(libs))

errors = []
for lib in sorted(set(libs) | set(table)):
    if lib not in table:
        errors.append(f"{lib} ({libs[lib]}) has no row in the table")
        continue
    if lib not in libs:
        errors.append(f"{lib}: a row, but no add_library under lib/")
        continue
    directory, named = table[lib]
    if directory != libs[lib]:
        errors.append(f"{lib}: the table says {directory}, CMake {libs[lib]}")
    if named != cmake[lib]:
        errors.append(
            f"{lib}: the table names {sorted(named)}, CMake links {sorted(cmake[lib])}"
        )
assert not errors, "\n".join(errors)
print(f"{len(table)} libraries, their links as CMake states them")
