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
