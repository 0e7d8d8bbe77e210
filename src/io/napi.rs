//! NAPI rows check the path they measure: busy polling (io_uring's registered NAPI, epoll's
//! EPIOCSPARAMS) polls the device queues its sockets name in SO_INCOMING_NAPI_ID; a socket
//! with id 0 (loopback, a veth pair without GRO) gives it nothing to poll. The servers of those
//! rows read each connection's id at its first received bytes (the id is the receive queue of
//! the last packet) and count `napi_socks`, `napi_id_zero`, `napi_check_errors`; the runner
//! warns `no_napi_id` on a cell whose server saw an id 0.

use std::io;

/// SO_INCOMING_NAPI_ID of socket `fd` (0: none): the one `ringside env`'s probe reads too.
pub(crate) use crate::env::uring::modern::napi_id as incoming_napi_id;

/// Adds one reading to a server's three NAPI counters (socks, id_zero, errors).
pub(crate) fn count(id: io::Result<u32>, socks: &mut u64, id_zero: &mut u64, errors: &mut u64) {
    match id {
        Ok(0) => {
            *socks += 1;
            *id_zero += 1;
        }
        Ok(_) => *socks += 1,
        Err(_) => *errors += 1,
    }
}

#[cfg(test)]
mod tests {
    use crate::measure::cell::ServerNapiCounters;
    use crate::measure::CounterSet;

    /// The servers' `napi_*` counters reach a cell `server_`-prefixed as the typed set the
    /// runner reads (its `no_napi_id` warning): a counter renamed on either side fails here.
    #[test]
    fn every_server_napi_counter_is_the_typed_sets() {
        let typed: Vec<String> = ServerNapiCounters::NAMES
            .iter()
            .map(|n| n.strip_prefix("server_").unwrap().to_string())
            .collect();
        for names in [
            crate::io::uring::server::UringCounters::NAMES,
            crate::io::epoll::server::EpollCounters::NAMES,
        ] {
            let napi: Vec<String> = names
                .iter()
                .filter(|n| n.starts_with("napi_"))
                .map(|n| n.to_string())
                .collect();
            assert_eq!(napi, typed);
        }
    }
}
