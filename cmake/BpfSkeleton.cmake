# xref_bpf_skeleton(NAME) compiles bpf/NAME.bpf.c with clang-19 for the BPF
# target and generates NAME.skel.h with `bpftool gen skeleton`. The skeleton
# embeds the object, so the helper needs no compiler at run time.
set(XREF_BPF_GENERATED_DIR ${CMAKE_BINARY_DIR}/bpf-generated)
file(MAKE_DIRECTORY ${XREF_BPF_GENERATED_DIR})

function(xref_bpf_skeleton name)
  set(source ${CMAKE_CURRENT_SOURCE_DIR}/${name}.bpf.c)
  set(object ${XREF_BPF_GENERATED_DIR}/${name}.bpf.o)
  set(skeleton ${XREF_BPF_GENERATED_DIR}/${name}.skel.h)
  file(GLOB bpf_headers CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.h ${CMAKE_SOURCE_DIR}/shared/*_abi.h)
  add_custom_command(
    OUTPUT ${object}
    COMMAND ${XREF_CLANG_BPF} -target bpf -O2 -g -Wall -Werror -D__TARGET_ARCH_x86
            -I${CMAKE_CURRENT_SOURCE_DIR} -I${CMAKE_SOURCE_DIR}/shared -I/usr/include/x86_64-linux-gnu
            -c ${source} -o ${object}
    COMMAND ${XREF_LLVM_STRIP} -g ${object}
    DEPENDS ${source} ${bpf_headers}
    COMMENT "BPF ${name}.bpf.c"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skeleton}
    COMMAND ${XREF_BPFTOOL} gen skeleton ${object} name ${name}_bpf > ${skeleton}
    DEPENDS ${object}
    COMMENT "skeleton ${name}.skel.h"
    VERBATIM)
  add_custom_target(${name}_skeleton DEPENDS ${skeleton})
  set_property(GLOBAL APPEND PROPERTY XREF_BPF_SKELETONS ${name}_skeleton)
endfunction()
