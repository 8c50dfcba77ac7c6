# python_packages.cmake: adds a `python-packages` target that turns this build's artifacts
# directory into wheels and the `rocm` sdist with rocm-packager (`cargo xtask package`).
#
# In TheRock's top-level CMakeLists.txt, after the artifacts are defined:
#
#   include("/path/to/rocm-packager/cmake/python_packages.cmake")
#
# then `cmake --build build --target python-packages` writes the wheels and the sdist to
# build/python-packages/dist/ (the layout of build_python_packages.py's --dest-dir, so
# `pip install --find-links=build/python-packages/dist` finds them). Every setting is a cache variable, so it can also be given on the
# configure line (-DROCM_PACKAGER_DEST_DIR=...):
#
#   ROCM_PACKAGER_DIR            this repository (default: the directory above this file)
#   ROCM_PACKAGER_ARTIFACTS_DIR  the artifacts to package (default: ${CMAKE_BINARY_DIR}/artifacts,
#                                where TheRock writes them)
#   ROCM_PACKAGER_DEST_DIR       --dest-dir: archives go to its dist/ (default:
#                                ${CMAKE_BINARY_DIR}/python-packages)
#   ROCM_PACKAGER_VERSION        package version (default: THEROCK_PACKAGE_VERSION when it starts
#                                with a digit, else `cargo xtask package` reads version.json of
#                                the checkout and appends .dev0)
#   ROCM_PACKAGER_THEROCK_DIR    the TheRock checkout (default: ${CMAKE_SOURCE_DIR} when it holds
#                                version.json); gives the version and the GPU family table
#   ROCM_PACKAGER_EXTRA_ARGS     more `cargo xtask package` flags, as a list
#                                (e.g. "--devel-tarball-compression;--platform-tag;auto")
#   ROCM_PACKAGER_DEPENDS        targets to build first (e.g. the one that writes the artifacts)
#   ROCM_PACKAGER_CARGO          the cargo program (default: found on PATH or in ~/.cargo/bin)
#   ROCM_PACKAGER_CARGO_TARGET_DIR  cargo's target directory for building the packager
#                                (default: empty, i.e. ${ROCM_PACKAGER_DIR}/target)
#
# The target always runs (the packager itself skips nothing, and is fast next to the build).

cmake_minimum_required(VERSION 3.20)

get_filename_component(_rocm_packager_default_dir "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(ROCM_PACKAGER_DIR "${_rocm_packager_default_dir}" CACHE PATH
  "rocm-packager checkout (holds Cargo.toml)")
set(ROCM_PACKAGER_ARTIFACTS_DIR "${CMAKE_BINARY_DIR}/artifacts" CACHE PATH
  "TheRock artifacts directory to package")
set(ROCM_PACKAGER_DEST_DIR "${CMAKE_BINARY_DIR}/python-packages" CACHE PATH
  "--dest-dir of the packager: the wheels and the rocm sdist go to its dist/")

set(_rocm_packager_default_version "")
# TheRock's default THEROCK_PACKAGE_VERSION is a word ("git", "ADHOCBUILD"), not a version.
if(THEROCK_PACKAGE_VERSION MATCHES "^[0-9]")
  set(_rocm_packager_default_version "${THEROCK_PACKAGE_VERSION}")
endif()
set(ROCM_PACKAGER_VERSION "${_rocm_packager_default_version}" CACHE STRING
  "Package version (empty: {version.json}.dev0 of the TheRock checkout)")

set(_rocm_packager_default_therock "")
if(EXISTS "${CMAKE_SOURCE_DIR}/version.json")
  set(_rocm_packager_default_therock "${CMAKE_SOURCE_DIR}")
endif()
set(ROCM_PACKAGER_THEROCK_DIR "${_rocm_packager_default_therock}" CACHE PATH
  "TheRock checkout (empty: none)")
set(ROCM_PACKAGER_EXTRA_ARGS "" CACHE STRING "More `cargo xtask package` flags (a list)")
set(ROCM_PACKAGER_DEPENDS "" CACHE STRING "Targets python-packages depends on (a list)")
set(ROCM_PACKAGER_CARGO_TARGET_DIR "" CACHE PATH
  "Cargo target directory for building the packager (empty: cargo's default)")

find_program(ROCM_PACKAGER_CARGO cargo HINTS "$ENV{CARGO_HOME}/bin" "$ENV{HOME}/.cargo/bin"
  DOC "cargo, to build and run rocm-packager")
if(NOT ROCM_PACKAGER_CARGO)
  message(FATAL_ERROR "python_packages.cmake: cargo not found; install Rust (https://rustup.rs) "
    "or set ROCM_PACKAGER_CARGO")
endif()
if(NOT EXISTS "${ROCM_PACKAGER_DIR}/Cargo.toml")
  message(FATAL_ERROR "python_packages.cmake: no Cargo.toml in ROCM_PACKAGER_DIR=${ROCM_PACKAGER_DIR}")
endif()

set(_rocm_packager_args
  --artifact-dir "${ROCM_PACKAGER_ARTIFACTS_DIR}"
  --dest-dir "${ROCM_PACKAGER_DEST_DIR}")
if(ROCM_PACKAGER_VERSION)
  list(APPEND _rocm_packager_args --version "${ROCM_PACKAGER_VERSION}")
endif()
if(ROCM_PACKAGER_THEROCK_DIR)
  list(APPEND _rocm_packager_args --therock-dir "${ROCM_PACKAGER_THEROCK_DIR}")
endif()
list(APPEND _rocm_packager_args ${ROCM_PACKAGER_EXTRA_ARGS})

# `cmake -E env` so the target directory reaches cargo whatever generator runs the command.
set(_rocm_packager_env "")
if(ROCM_PACKAGER_CARGO_TARGET_DIR)
  set(_rocm_packager_env "CARGO_TARGET_DIR=${ROCM_PACKAGER_CARGO_TARGET_DIR}")
endif()

add_custom_target(python-packages
  COMMAND "${CMAKE_COMMAND}" -E env ${_rocm_packager_env}
    "${ROCM_PACKAGER_CARGO}" run --manifest-path "${ROCM_PACKAGER_DIR}/Cargo.toml" --package xtask-launch --
    package ${_rocm_packager_args}
  WORKING_DIRECTORY "${CMAKE_BINARY_DIR}"
  COMMENT "Packaging ${ROCM_PACKAGER_ARTIFACTS_DIR} into ${ROCM_PACKAGER_DEST_DIR}/dist"
  # The terminal, so the packager can draw its progress bars under Ninja.
  USES_TERMINAL
  VERBATIM)
if(ROCM_PACKAGER_DEPENDS)
  add_dependencies(python-packages ${ROCM_PACKAGER_DEPENDS})
endif()
