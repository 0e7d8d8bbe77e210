//! ringside: parse, dispatch, print the error chain, exit.

fn main() {
    let cli = ringside::cli::parse();
    let code = match ringside::app::dispatch(cli) {
        Ok(code) => code,
        // A closed stdout that a write did not route through `app::stdout`: a quiet end.
        Err(e) if ringside::app::stdout::is_broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            if e.downcast_ref::<ringside::error::InputError>().is_some() {
                2
            } else {
                1
            }
        }
    };
    std::process::exit(code);
}
