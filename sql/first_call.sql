-- What the first pack of a process costs, in the sqlite3 shell (build the extension first: cargo
-- build --release --features loadable_extension), from the repository root:
--   for m in NULL "'gpt-4o'" "'gpt-4'" "'claude'"; do sed "s/:model/$m/" sql/first_call.sql | sqlite3 :memory:; done
-- A process's first call of a profile loads its tokenizer tables (o200k_base for gpt-4o and for the
-- estimate profiles, which count o200k pieces; cl100k_base for gpt-4); later calls reuse them.
.load target/release/libcmp
SELECT cmp_init();
INSERT INTO cmp_memories(content) VALUES ('Atlas ships on Friday');
.timer on
SELECT 'first', length(cmp_context('when does atlas ship', :model, 1000)) > 0;
SELECT 'second', length(cmp_context('when does atlas ship', :model, 1000)) > 0;
