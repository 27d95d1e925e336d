//! openraft's own storage conformance suite (`openraft::testing::Suite::test_all`: votes,
//! appends, truncation, purges, membership, snapshots, applies) on Strata's log store and
//! state machine, each case on a fresh database.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use openraft::StorageError;
use openraft::testing::{StoreBuilder, Suite};
use strata_openraft::{StrataLogStore, StrataStateMachine, TypeConfig};

struct OnStrata;

impl StoreBuilder<TypeConfig, StrataLogStore<TypeConfig>, StrataStateMachine, tempfile::TempDir>
    for OnStrata
{
    async fn build(
        &self,
    ) -> Result<
        (
            tempfile::TempDir,
            StrataLogStore<TypeConfig>,
            StrataStateMachine,
        ),
        StorageError<u64>,
    > {
        let dir = tempfile::tempdir().unwrap();
        let (log, sm) = strata_openraft::open(dir.path()).unwrap();
        Ok((dir, log, sm))
    }
}

#[test]
fn openraft_storage_suite_passes() {
    Suite::test_all(OnStrata).unwrap();
}
