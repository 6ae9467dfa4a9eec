//! The node's integration tests, in one binary: each file below is a module (its own header
//! says what it tests). One binary links the node once where eleven did (that took about 150 s
//! of CPU in a clean build). Its tests run one at a time ([`support::one_at_a_time`]), as they
//! did in binaries of their own. Run one file's tests with
//! `cargo test -p scalechain-node --test it <file>::`.
#![allow(clippy::unwrap_used)]

mod support;

mod api;
mod bodies;
mod clock;
mod crowd;
mod disk;
mod events;
mod join;
mod limits;
mod peers;
mod profile;
mod restart;
