# Writes a C++ source that links the bytes of every file under DIR into the binary with the
# assembler's .incbin (large binary tables: a character-array literal of megabytes would
# cost the compiler minutes), and an index of them by name PREFIX<relative name>:
#   cmake -DDIR=... -DOUT=... -DSYMBOL=... -DPREFIX=... -P embed_incbin.cmake
# Each file's SHA-256 is written beside its .incbin so that a changed file changes this
# source (compiler caches hash the source, not what .incbin reads).
file(GLOB_RECURSE files RELATIVE "${DIR}" "${DIR}/*")
list(SORT files)
set(body "// Generated from ${DIR} by cmake/embed_incbin.cmake; do not edit.\n#include <span>\n#include <string_view>\n#include <utility>\n\n")
set(entries "")
set(i 0)
foreach(f IN LISTS files)
  file(SHA256 "${DIR}/${f}" digest)
  file(SIZE "${DIR}/${f}" bytes)
  set(sym "fleetplan_embedded_${SYMBOL}_${i}")
  string(APPEND body "// ${f}: ${bytes} bytes, sha256 ${digest}\n")
  string(APPEND body "__asm__(\".section .rodata\\n.balign 16\\n.type ${sym}, @object\\n${sym}:\\n.incbin \\\"${DIR}/${f}\\\"\\n.size ${sym}, .-${sym}\\n.previous\\n\");\n")
  string(APPEND body "extern \"C\" const char ${sym}[];\n")
  string(APPEND entries "    {\"${PREFIX}${f}\", std::string_view(${sym}, ${bytes})},\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND body "\nnamespace fleetplan {\n\nstd::span<const std::pair<std::string_view, std::string_view>> ${SYMBOL}() {\n  static const std::pair<std::string_view, std::string_view> files[] = {\n${entries}  };\n  return files;\n}\n\n}  // namespace fleetplan\n")
file(WRITE "${OUT}.tmp" "${body}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
