# docs_pages_test.cmake (ctest op_docs_pages): every docs/ops/<pkg>.md belongs to a package,
# kernels-src/<pkg>/kernel.json (the op_docs_<pkg> tests hold each page to its manifest).
#   cmake -DKH_SOURCE_DIR=<repo> -P docs_pages_test.cmake
cmake_minimum_required(VERSION 3.25)
file(GLOB pages RELATIVE "${KH_SOURCE_DIR}/docs/ops" "${KH_SOURCE_DIR}/docs/ops/*.md")
set(bad 0)
foreach(page IN LISTS pages)
  string(REGEX REPLACE "\\.md$" "" pkg "${page}")
  if(EXISTS "${KH_SOURCE_DIR}/kernels-src/${pkg}/kernel.json")
    message(STATUS "docs/ops/${page}: kernels-src/${pkg}/kernel.json")
  else()
    message(SEND_ERROR "docs/ops/${page}: no package kernels-src/${pkg}/ renders it; delete the page, or render it "
                       "from the package it belongs to (kernels docs kernels-src/<pkg>/kernel.json -o docs/ops/<pkg>.md)")
  endif()
endforeach()
list(LENGTH pages n)
message(STATUS "${n} pages in docs/ops")
