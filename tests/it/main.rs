//! Integration tests, one binary. Each module builds what it needs for real: ELF files
//! with `cc`, packages with the library, venvs with `pip`.

mod catalog;
mod cmake;
mod devel_links;
mod downstream;
mod elf;
mod example;
mod fat_split_plan;
mod hostile;
mod index;
mod install;
mod installed;
mod kpack_runtime;
mod manylinux;
mod pipeline;
mod post_release;
mod python;
mod release_rule;
mod repair;
mod rerun;
mod runtime_api;
mod sbom;
mod seeds;
mod split;
mod split_sdk;
mod support;
mod targets;
mod variants;
mod verify;
mod wheel;
mod windows;
