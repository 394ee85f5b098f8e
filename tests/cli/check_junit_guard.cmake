# kvcap check --junit never writes over a profile: a profile's extension in any case (dep.YAML) and an existing
# file that is not XML whatever its name (dep.profile) are refused (exit 2) and left unchanged; an earlier JUnit
# report is overwritten. Run with -DKVCAP=... -DREQ=requirements.yaml -DPROFILE=any.yaml -DDIR=scratch folder.
cmake_minimum_required(VERSION 3.25)
file(READ ${PROFILE} original)
foreach(name dep.YAML dep.profile)
  file(WRITE ${DIR}/${name} "${original}")
  execute_process(COMMAND ${KVCAP} check ${REQ} --junit ${DIR}/${name} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  file(READ ${DIR}/${name} after)
  if(NOT rc EQUAL 2 OR NOT after STREQUAL original OR NOT err MATCHES "--junit")
    message(FATAL_ERROR "--junit ${name}: exit ${rc} (expected 2), file unchanged: "
                        "${after} STREQUAL ${original}\n${err}")
  endif()
  message(STATUS "--junit ${name}: ${err}")
endforeach()
file(WRITE ${DIR}/earlier.xml "<?xml version=\"1.0\"?>\n<testsuites/>\n")
execute_process(COMMAND ${KVCAP} check ${REQ} --junit ${DIR}/earlier.xml RESULT_VARIABLE rc ERROR_VARIABLE err)
file(READ ${DIR}/earlier.xml report)
if(NOT rc EQUAL 0 OR NOT report MATCHES "<testcase")
  message(FATAL_ERROR "--junit earlier.xml: exit ${rc}, expected 0 and a new report\n${err}")
endif()
# A new report is not created before the check has read its requirements (a requirement may name that path);
# a folder that does not exist is refused at once, and nothing is created.
file(REMOVE ${DIR}/new.xml)
execute_process(COMMAND ${KVCAP} check ${REQ} --junit ${DIR}/missing/new.xml RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "does not exist" OR EXISTS ${DIR}/missing)
  message(FATAL_ERROR "--junit missing/new.xml: exit ${rc}, expected 2 and 'does not exist'\n${err}")
endif()
execute_process(COMMAND ${KVCAP} check ${REQ} --junit ${DIR}/new.xml RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS ${DIR}/new.xml)
  message(FATAL_ERROR "--junit new.xml: exit ${rc}, expected 0 and a report\n${err}")
endif()
# An earlier report saved with a UTF-8 byte order mark and blank lines is still a report.
string(ASCII 239 187 191 bom)
file(WRITE ${DIR}/bom.xml "${bom}\n\n  <?xml version=\"1.0\"?>\n<testsuites/>\n")
execute_process(COMMAND ${KVCAP} check ${REQ} --junit ${DIR}/bom.xml RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--junit bom.xml: exit ${rc}, expected 0\n${err}")
endif()
# The command's own output is not a report file: --junit /dev/stdout with the output in a file would cut the table.
execute_process(COMMAND ${KVCAP} check ${REQ} --junit /dev/stdout OUTPUT_FILE ${DIR}/stdout.txt RESULT_VARIABLE rc
                ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "where this command writes its output")
  message(FATAL_ERROR "--junit /dev/stdout > file: exit ${rc}, expected 2\n${err}")
endif()
# /dev/null discards the report; a link to a missing file is refused (it would create the link's target).
execute_process(COMMAND ${KVCAP} check ${REQ} --junit /dev/null OUTPUT_QUIET RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--junit /dev/null: exit ${rc}, expected 0\n${err}")
endif()
file(REMOVE ${DIR}/dangling.xml ${DIR}/missing-target.yaml)
file(CREATE_LINK ${DIR}/missing-target.yaml ${DIR}/dangling.xml SYMBOLIC)
execute_process(COMMAND ${KVCAP} check ${REQ} --junit ${DIR}/dangling.xml RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "link to a file that does not exist" OR EXISTS ${DIR}/missing-target.yaml)
  message(FATAL_ERROR "--junit dangling.xml: exit ${rc}, expected 2 and no file created\n${err}")
endif()
