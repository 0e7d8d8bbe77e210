//! The load generator's engines: a test of the load generator wrapped in [`each_engine`] runs
//! once per engine, and the helpers that build its configuration or its command line read
//! [`engine`] (a thread-local: each test runs on its own thread).

use ringside::load::Engine;
use std::cell::Cell;

/// Every engine `ringside load --engine` takes.
pub const ENGINES: [Engine; 2] = [Engine::Epoll, Engine::Uring];

thread_local! {
    static CURRENT: Cell<Engine> = const { Cell::new(Engine::Epoll) };
}

/// Runs `f` once per engine, [`engine`] set to it (named on stderr first, which a failing
/// test prints).
pub fn each_engine(f: impl Fn()) {
    for e in ENGINES {
        eprintln!("-- load engine: {}", e.name());
        CURRENT.with(|c| c.set(e));
        f();
    }
    CURRENT.with(|c| c.set(Engine::Epoll));
}

/// The engine the test runs with now (the default, epoll, outside [`each_engine`]).
pub fn engine() -> Engine {
    CURRENT.with(|c| c.get())
}

/// `--engine NAME` for the command line.
pub fn engine_args() -> [&'static str; 2] {
    ["--engine", engine().name()]
}
