# Fails when docs/settings.md differs from what `kernels settings --markdown` renders from
# the table in install/src/settings.cpp. Fix: kernels settings --markdown > docs/settings.md
execute_process(COMMAND ${KERNELS} settings --markdown OUTPUT_VARIABLE rendered RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kernels settings --markdown failed (${rc})")
endif()
file(READ ${DOC} checked_in)
if(NOT rendered STREQUAL checked_in)
  message(FATAL_ERROR "docs/settings.md is not what the settings table renders; regenerate it:\n"
                      "  build/dev/cli/kernels settings --markdown > docs/settings.md")
endif()
