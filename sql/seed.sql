-- Seed memories for the demo: a product team shipping "Atlas". Plain INSERTs, so any connection
-- can load them after `SELECT cmp_init();` (examples/demo.rs includes this file; sql/demo.sql
-- `.read`s it). Ids are fixed so output is reproducible; every row is captured before 2026-06-01, the
-- `now` the demo reads at.
--
-- What it exercises: one decision superseded by another (mem_000000000001 → mem_000000000002),
-- negative-kind rules (constraints), two restatements of one fact (mem_000000000007,
-- mem_000000000008: a near-duplicate restatement that claim folding merges), long meeting notes
-- (mem_000000000031..35: they put the 3000-token cursor profile under pressure), episodic items with occurred_at, one redacted row (mem_000000000027), one row
-- in another scope (mem_000000000028, scope 'personal') and open loops in cmp_tasks.

INSERT INTO cmp_memories(id, kind, content, entities, occurred_at, captured_at, source_url, confidence, trust) VALUES
  ('mem_000000000002', 'decision',
   'Decision: the Atlas public launch moves to June 12 so the billing migration can finish first.',
   '["Atlas"]', '2026-04-15T10:00:00Z', '2026-04-15T10:05:00Z', 'https://wiki.example/atlas/decisions#launch-date', NULL, 0.9),
  ('mem_000000000003', 'negative',
   'Never email customers on weekends; schedule Atlas announcements for Tuesday to Thursday.',
   '["Atlas"]', NULL, '2026-03-02T09:00:00Z', NULL, NULL, 0.9),
  ('mem_000000000004', 'semantic',
   'Dana leads the Atlas launch and signs off on every external announcement.',
   '["Atlas","Dana"]', NULL, '2026-03-03T09:00:00Z', NULL, NULL, 0.8),
  ('mem_000000000005', 'semantic',
   'Lee owns the Atlas billing migration.',
   '["Atlas","Lee"]', NULL, '2026-03-05T09:00:00Z', NULL, NULL, 0.8),
  ('mem_000000000006', 'semantic',
   'Priya runs the Atlas beta program with 40 design partners.',
   '["Atlas","Priya"]', NULL, '2026-03-06T09:00:00Z', NULL, NULL, 0.7),
  ('mem_000000000007', 'semantic',
   'Atlas pricing starts at $49 per seat per month.',
   '["Atlas"]', NULL, '2026-03-20T09:00:00Z', 'https://wiki.example/atlas/pricing', 0.95, 0.5),
  ('mem_000000000008', 'semantic',
   'Atlas pricing starts at $49 per seat, billed each month.',
   '["Atlas"]', NULL, '2026-04-02T16:30:00Z', 'https://chat.example/c/launch/1841', NULL, 0.5),
  ('mem_000000000009', 'preference',
   'Dana prefers one-page launch briefs with the risks listed first.',
   '["Dana"]', NULL, '2026-03-11T09:00:00Z', NULL, NULL, 0.6),
  ('mem_000000000010', 'style',
   'Customer-facing copy uses plain words, short sentences and no exclamation marks.',
   NULL, NULL, '2026-03-12T09:00:00Z', NULL, NULL, 0.6),
  ('mem_000000000011', 'procedural',
   'To ship a release: tag it, run the smoke tests, then post the changelog in #launch.',
   NULL, NULL, '2026-03-13T09:00:00Z', NULL, NULL, 0.7),
  ('mem_000000000012', 'episodic',
   'Launch review: legal approved the Atlas terms of service.',
   '["Atlas"]', '2026-05-20T15:00:00Z', '2026-05-20T15:10:00Z', NULL, NULL, 0.5),
  ('mem_000000000013', 'episodic',
   'Lee reported the billing migration is 80% done; two invoices failed in staging.',
   '["Lee"]', '2026-05-22T11:00:00Z', '2026-05-22T11:05:00Z', NULL, NULL, 0.5),
  ('mem_000000000014', 'episodic',
   'Priya''s beta survey: onboarding takes too long for teams larger than 20.',
   '["Priya"]', '2026-05-26T14:00:00Z', '2026-05-26T14:20:00Z', NULL, NULL, 0.5),
  ('mem_000000000015', 'episodic',
   'Dana moved the launch rehearsal to June 9.',
   '["Dana"]', '2026-05-29T08:30:00Z', '2026-05-29T08:35:00Z', NULL, NULL, 0.5),
  ('mem_000000000016', 'decision',
   'Decision: Atlas launches in English only; German and Japanese follow in Q3.',
   '["Atlas"]', '2026-04-20T10:00:00Z', '2026-04-20T10:02:00Z', NULL, NULL, 0.8),
  ('mem_000000000017', 'semantic',
   'The Atlas status page lives at status.atlas.example.',
   '["Atlas"]', NULL, '2026-03-25T09:00:00Z', NULL, NULL, 0.5),
  ('mem_000000000018', 'negative',
   'Do not promise a launch date to the press before Dana approves it.',
   '["Dana"]', NULL, '2026-04-16T09:00:00Z', NULL, NULL, 0.8),
  ('mem_000000000019', 'semantic',
   'Support hours for Atlas are 8:00 to 18:00 CET, Monday to Friday.',
   '["Atlas"]', NULL, '2026-04-01T09:00:00Z', NULL, NULL, 0.5),
  ('mem_000000000020', 'preference',
   'Lee wants bug reports as GitHub issues, not chat messages.',
   '["Lee"]', NULL, '2026-03-18T09:00:00Z', NULL, NULL, 0.6),
  ('mem_000000000021', 'episodic',
   'Priya and Dana agreed to cap the beta at 50 teams.',
   '["Priya","Dana"]', '2026-05-15T13:00:00Z', '2026-05-15T13:30:00Z', NULL, NULL, 0.5),
  ('mem_000000000022', 'semantic',
   'Priya''s team is in Lisbon; Lee works from Toronto.',
   '["Priya","Lee"]', NULL, '2026-03-21T09:00:00Z', NULL, NULL, 0.5),
  ('mem_000000000023', 'procedural',
   'Rollback plan: turn the atlas_enabled flag off and restore the last billing snapshot.',
   '["Atlas"]', NULL, '2026-04-28T09:00:00Z', NULL, NULL, 0.8),
  ('mem_000000000024', 'episodic',
   'The load test handled three times the expected launch traffic.',
   '["Atlas"]', '2026-05-30T17:00:00Z', '2026-05-30T17:05:00Z', NULL, NULL, 0.5),
  ('mem_000000000025', 'semantic',
   'Competitor Nimbus launched a free tier in April.',
   '["Nimbus"]', '2026-04-10T00:00:00Z', '2026-04-11T09:00:00Z', 'https://news.example/nimbus-free-tier', NULL, 0.4),
  ('mem_000000000026', 'decision',
   'Decision: launch-week on-call is Lee, then Priya, then Dana.',
   '["Lee","Priya","Dana"]', '2026-05-18T10:00:00Z', '2026-05-18T10:01:00Z', NULL, NULL, 0.8),
  ('mem_000000000029', 'semantic',
   'Atlas uptime over the beta was 99.95%.',
   '["Atlas"]', '2026-05-31T00:00:00Z', '2026-05-31T06:00:00Z', 'https://status.atlas.example/history', 0.9, 0.5),
  ('mem_000000000030', 'episodic',
   'Marketing finished the launch video; it runs 90 seconds.',
   NULL, '2026-05-31T16:00:00Z', '2026-05-31T16:10:00Z', NULL, NULL, 0.5);

-- Long meeting notes: several sentences each, so a tight budget packs their head sentence first.
INSERT INTO cmp_memories(id, kind, content, entities, occurred_at, captured_at, source_url, confidence, trust) VALUES
  ('mem_000000000031', 'episodic',
   'Atlas launch sync, May 12. Dana opened with the launch checklist: legal review, billing migration, status page, press kit and the support rota. Legal expects to approve the terms of service within a week. Lee said the billing migration is the critical path and asked for two more days of staging time before the cutover. Priya reported that beta partners want an export feature before they pay; the team agreed it is out of scope for launch and will be promised for July. Marketing asked whether the launch video can mention the free trial length; Dana said fourteen days. Action items: Lee to post a migration runbook, Priya to draft the partner FAQ, Dana to confirm the press embargo time with the agency. The next sync is May 19 at the same time.',
   '["Atlas","Dana","Lee","Priya"]', '2026-05-12T16:00:00Z', '2026-05-12T16:00:00Z', NULL, NULL, 0.6),
  ('mem_000000000032', 'episodic',
   'Atlas launch sync, May 19. The terms of service are approved and the status page is live at status.atlas.example. Lee ran the billing migration twice in staging; the second run finished in forty minutes but two invoices failed because of a currency rounding bug, which Lee is fixing. Priya shared the first beta survey: teams under twenty people finish onboarding in a day, larger teams take a week because of the permissions setup. Dana decided that onboarding guides for large teams ship in the first week after launch, not before. The press kit is drafted; the embargo lifts at 9:00 CET on launch day. Open risk: the on-call rota for launch week is not confirmed. The next sync is May 26.',
   '["Atlas","Dana","Lee","Priya"]', '2026-05-19T16:00:00Z', '2026-05-19T16:00:00Z', NULL, NULL, 0.6),
  ('mem_000000000033', 'episodic',
   'Atlas launch sync, May 26. The currency rounding bug is fixed and the migration dry run passed with no failed invoices. The load test is scheduled for May 30 and should cover three times the expected launch traffic. Priya capped the beta at fifty teams and will close sign-ups on June 1. Dana reviewed the launch email draft and asked for the risks to be listed first, in plain words, with no exclamation marks. Support will run from 8:00 to 18:00 CET on weekdays during launch week, with Lee, Priya and Dana on call in that order. Marketing confirmed the launch video runs ninety seconds. The team agreed that nobody promises a date to the press until Dana approves it.',
   '["Atlas","Dana","Lee","Priya"]', '2026-05-26T16:00:00Z', '2026-05-26T16:00:00Z', NULL, NULL, 0.6),
  ('mem_000000000034', 'episodic',
   'Atlas pricing workshop notes. The team compared per-seat pricing with usage-based pricing for three kinds of customers: small agencies, mid-size product teams and large enterprises. Per-seat pricing was easier to explain and matched how beta partners budget. Usage-based pricing fit the largest customers better but made invoices hard to predict. The team settled on $49 per seat per month, a fourteen-day free trial and an annual plan with two months free. Enterprise contracts above two hundred seats are negotiated separately by Dana. A competitor, Nimbus, launched a free tier in April; the team decided not to match it and to compete on reliability and support instead.',
   '["Atlas","Dana","Lee","Priya"]', '2026-05-08T10:00:00Z', '2026-05-08T10:00:00Z', NULL, NULL, 0.6),
  ('mem_000000000035', 'episodic',
   'Load test report for Atlas. The test replayed three times the expected launch-day traffic for two hours against the staging cluster. Median response time stayed under 120 milliseconds and the 99th percentile under 600 milliseconds. One database replica fell behind by forty seconds during the peak and recovered without intervention. Billing webhooks were delayed by up to three minutes under peak load, which is acceptable for launch. The rollback plan was rehearsed: turning the atlas_enabled flag off took under a minute and restoring the billing snapshot took twelve minutes. Recommendation: launch as planned on June 12 and add a second replica before the European morning peak.',
   '["Atlas","Dana","Lee","Priya"]', '2026-05-30T18:00:00Z', '2026-05-30T18:00:00Z', NULL, NULL, 0.6);

-- The decision mem_000000000002 replaced: visible only when reading as_of a time before 2026-04-15.
INSERT INTO cmp_memories(id, kind, content, entities, occurred_at, captured_at, superseded_by, superseded_at, trust) VALUES
  ('mem_000000000001', 'decision',
   'Decision: the Atlas public launch is on May 28.',
   '["Atlas"]', '2026-03-10T10:00:00Z', '2026-03-10T10:05:00Z', 'mem_000000000002', '2026-04-15T10:05:00Z', 0.9);

-- Redacted: in no index, never returned.
INSERT INTO cmp_memories(id, kind, content, entities, captured_at, redacted) VALUES
  ('mem_000000000027', 'semantic', 'Dana''s home phone number is 555-0142.', '["Dana"]', '2026-03-04T09:00:00Z', 1);

-- Another owner's namespace: only reads with scope 'personal' see it.
INSERT INTO cmp_memories(id, kind, content, entities, captured_at, scope) VALUES
  ('mem_000000000028', 'procedural', 'Book a dentist appointment before the Atlas launch.', '["Atlas"]', '2026-05-02T09:00:00Z', 'personal');

-- Open loops.
INSERT INTO cmp_tasks(id, title, status, due_at, entities) VALUES
  ('task_000000000001', 'Draft the Atlas launch email for Dana to approve', 'open', '2026-06-08T17:00:00Z', '["Atlas","Dana"]'),
  ('task_000000000002', 'Fix the two failed staging invoices', 'open', '2026-06-05T17:00:00Z', '["Lee"]'),
  ('task_000000000003', 'Confirm the launch-week on-call rota', 'done', NULL, NULL);
