//! Tool pins in PostgreSQL ([`crate::store::pins`] has the SQL both stores share).

use super::PostgresBackend;
use crate::store::backend::{PinDecision, PinState, SeenTool, ToolPin};
use crate::store::StoreError;

impl PostgresBackend {
    pub(super) async fn see_pinned(
        &self,
        seen: Vec<SeenTool>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.run(move |c| {
            Box::pin(async move {
                let tx = c.transaction().await?;
                for t in &seen {
                    let state = if t.approved_by.is_some() {
                        PinState::Approved
                    } else {
                        PinState::Pending
                    };
                    let added = tx
                        .execute(
                            crate::store::pins::insert_sql(true),
                            &[
                                &t.server,
                                &t.tool,
                                &t.digest,
                                &t.definition,
                                &state.as_str(),
                                &now_ms,
                                &t.approved_by,
                            ],
                        )
                        .await?;
                    if added > 0 {
                        tx.execute(
                            crate::store::pins::drop_replaced_sql(
                                true,
                                state == PinState::Approved,
                            ),
                            &[&t.server, &t.tool, &t.digest],
                        )
                        .await?;
                    }
                }
                tx.commit().await
            })
        })
        .await
    }

    pub(super) async fn pinned(
        &self,
        servers: Vec<String>,
        definitions: bool,
    ) -> Result<Vec<ToolPin>, StoreError> {
        self.run(move |c| {
            Box::pin(async move {
                let rows = c
                    .query(
                        &format!(
                            "SELECT {} FROM tool_pins WHERE server = ANY($1)
                             ORDER BY server, tool, seen_at",
                            crate::store::pins::columns(definitions)
                        ),
                        &[&servers],
                    )
                    .await?;
                Ok(rows
                    .iter()
                    .map(|r| ToolPin {
                        server: r.get(0),
                        tool: r.get(1),
                        digest: r.get(2),
                        definition: r.get(3),
                        state: PinState::parse(r.get(4)),
                        seen_at: r.get(5),
                        decided_by: r.get(6),
                        decided_at: r.get(7),
                    })
                    .collect())
            })
        })
        .await
    }

    pub(super) async fn decide_pinned(
        &self,
        server: &str,
        tool: &str,
        digest: &str,
        decision: PinDecision,
        by: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let (server, tool, digest, by) = (
            server.to_string(),
            tool.to_string(),
            digest.to_string(),
            by.to_string(),
        );
        let state = crate::store::pins::decided_state(decision);
        self.run(move |c| {
            Box::pin(async move {
                c.execute(
                    crate::store::pins::decide_sql(true),
                    &[&server, &tool, &digest, &state, &by, &now_ms],
                )
                .await
                .map(|n| n > 0)
            })
        })
        .await
    }
}
