# Runs sample_service briefly and checks the contract its users rely on:
# the startup ground-truth lines, one recorded call tree per request, and a
# zero exit status after SIGTERM. Invoked by ctest with -DSERVICE and -DWORK_DIR.
cmake_minimum_required(VERSION 3.25)

set(record ${WORK_DIR}/sample_service_smoke.record)
file(REMOVE ${record})

# 2 threads x 4 requests, no sleeping.
execute_process(COMMAND ${SERVICE} --threads 2 --requests 4 --interval-us 0 --record ${record}
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "sample_service exited with ${status}: ${err}")
endif()
foreach(name handle_request validate price_order apply_fee route_even route_odd settle)
  if(NOT out MATCHES "func ${name} 0x[0-9a-f]+\n")
    message(FATAL_ERROR "no 'func ${name}' line in:\n${out}")
  endif()
endforeach()
if(NOT out MATCHES "marker 0x[0-9a-f]+\nheap_pattern 0x[0-9a-f]+\nready\n$")
  message(FATAL_ERROR "missing marker/heap_pattern/ready lines in:\n${out}")
endif()

# Per request: handle_request, validate, price_order, apply_fee, one route_*,
# settle x4 = 9 lines; 8 requests = 72 lines, half even and half odd.
file(STRINGS ${record} lines)
list(LENGTH lines count)
if(NOT count EQUAL 72)
  message(FATAL_ERROR "expected 72 recorded calls, got ${count}")
endif()
list(FILTER lines INCLUDE REGEX "^[0-9]+ [0-9]+ route_(even|odd) ")
list(LENGTH lines routes)
if(NOT routes EQUAL 8)
  message(FATAL_ERROR "expected 8 route_* calls, got ${routes}")
endif()
file(STRINGS ${record} first LIMIT_COUNT 9)
list(TRANSFORM first REPLACE "^[0-9]+ [0-9]+ ([a-z_]+).*" "\\1")
list(JOIN first " " tree)
if(NOT tree MATCHES "^handle_request validate price_order apply_fee route_(even|odd) settle settle settle settle$")
  message(FATAL_ERROR "unexpected call order: ${tree}")
endif()
# Request 0 (worker 0): asset 1 at unit price 250, amount 100, fee 25 bps.
file(STRINGS ${record} apply_fee REGEX "^[0-9]+ 0 apply_fee ")
if(NOT apply_fee MATCHES "^[0-9]+ 0 apply_fee 0x61a8 0x19$")
  message(FATAL_ERROR "unexpected apply_fee call for request 0: '${apply_fee}'")
endif()

# Runs forever until SIGTERM; --preserve-status makes timeout return the
# service's own exit status instead of 124.
execute_process(COMMAND timeout --preserve-status -s TERM 0.5 ${SERVICE} --interval-us 100000
                RESULT_VARIABLE status OUTPUT_QUIET)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "sample_service did not exit cleanly on SIGTERM: ${status}")
endif()
