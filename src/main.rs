//! ringside: parse, dispatch, print the error chain, exit.

fn main() {
    let cli = ringside::cli::parse();
    let code = match ringside::app::dispatch(cli) {
        Ok(code) => code,
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
