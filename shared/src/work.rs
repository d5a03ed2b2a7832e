//! Proof of work for registrations: an account costs a little CPU, so that a person cannot
//! make thousands. The stamp is bound to what is registered (`owner` or `worker`) and its name
//! as sent; the coordinator says how many leading zero bits it wants in
//! the protocol's `Version::registration_work`.

use sha2::{Digest, Sha256};

/// The hash a nonce is judged by.
fn stamp(what: &str, name: &str, nonce: u64) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"lexhive registration\n");
    h.update(what.as_bytes());
    h.update(b"\n");
    h.update(name.as_bytes());
    h.update(b"\n");
    h.update(nonce.to_le_bytes());
    h.finalize().into()
}

fn leading_zero_bits(h: &[u8; 32]) -> u32 {
    let mut n = 0;
    for b in h {
        n += b.leading_zeros();
        if *b != 0 {
            break;
        }
    }
    n
}

/// Whether `nonce` is work enough for registering `what` named `name`.
pub fn verify(what: &str, name: &str, nonce: u64, bits: u32) -> bool {
    bits == 0 || leading_zero_bits(&stamp(what, name, nonce)) >= bits
}

/// The first nonce that is work enough (about 2^bits hashes: a second or so at 20 bits).
pub fn solve(what: &str, name: &str, bits: u32) -> u64 {
    (0..).find(|&n| verify(what, name, n, bits)).expect("some nonce has enough zero bits")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_solved_stamp_verifies_for_its_name_only() {
        let n = solve("owner", "ada", 12);
        assert!(verify("owner", "ada", n, 12));
        assert!(verify("owner", "anything", 0, 0), "no work asked");
        // Bound to the name and to what is registered: a stamp for one is (almost surely) not
        // one for another; count how many of a few hundred happen to pass.
        let others = (0..300).filter(|i| verify("owner", &format!("ada{i}"), n, 12)).count();
        assert!(others < 3, "{others}");
        assert!(leading_zero_bits(&stamp("owner", "ada", n)) >= 12);
        assert_eq!(leading_zero_bits(&[0; 32]), 256);
        let mut h = [0u8; 32];
        h[1] = 0b0001_0000;
        assert_eq!(leading_zero_bits(&h), 11);
    }
}
