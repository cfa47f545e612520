//! The integration tests, one test binary (`tests/it`): every file or directory here is a
//! module of it. One binary links the library and its dependencies once instead of once per
//! file (issue 14: 30 test binaries took a third of the cold test build's link time);
//! nextest still runs every test in a process of its own.

mod support;

mod architecture;
mod attribution;
mod baseline;
mod benchmarks_doc;
mod browser;
mod choices;
mod cli;
mod client;
mod docs_refs;
mod evidence;
mod fuzz;
mod gpu_check;
mod hardening;
mod hardening3;
mod harness;
mod honesty;
mod hostile;
mod init;
mod link_layout;
mod load;
mod offline;
mod otlp;
mod outcomes;
mod overhead;
mod readme;
mod records;
mod review;
mod secrets;
mod serve;
mod serve_hostile;
mod server_scripts;
mod shards;
mod sigint;
mod sim;
mod startup;
mod stream;
mod telemetry;
mod timeline;
mod timeline_no_disk_writes;
mod workloads;
mod workspace;
