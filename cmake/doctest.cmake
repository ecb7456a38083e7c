# Docs that run (issue 26): one CTest entry per page, docs_<PAGE> (docs_README,
# docs_WORKLOADS, ...), running the page's marked command blocks in a fresh
# temporary folder and comparing their output where the page shows it
# (tests/doc_run.py; the markers are in docs/CONTRIBUTING.md). A page added
# to docs/ is picked up at the next configure.
file(GLOB ckh_doc_pages CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/docs/*.md)
foreach(page ${ckh_doc_pages})
  get_filename_component(stem ${page} NAME_WE)
  add_test(NAME docs_${stem} COMMAND bash ${CMAKE_SOURCE_DIR}/tests/test_docs.sh ${CKH_PYTHON} ${page}
           ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
  # Bounded work (a page's blocks, each a few scenario runs): the limit
  # leaves room for a loaded machine, not for more work.
  set_tests_properties(docs_${stem} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endforeach()
# The runner itself, on pages made to pass, drift and break the conventions.
add_test(NAME docs_runner COMMAND bash ${CMAKE_SOURCE_DIR}/tests/test_doc_run.sh ${CKH_PYTHON}
         ${CMAKE_SOURCE_DIR})
set_tests_properties(docs_runner PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77
                     ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
