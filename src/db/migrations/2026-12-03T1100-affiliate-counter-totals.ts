import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// What a program's affiliates' referral and click counters add up to, kept (issue 31): the
// overview's referred customers and clicks, and the referrals list's unfiltered count, summed
// the counters of every affiliate of the program at each view (100,000 rows: 18 ms on
// PostgreSQL, 5–7× a small program's page). affiliate_counter_totals holds their sums per
// program and shard (the first hex digit of the affiliate's id, as sale_days).
//
// Triggers on `affiliates` keep it, because the counters move on many paths — a referral's own
// one-statement write on PostgreSQL, the referral and click services, an affiliate's deletion
// whose referrals and clicks go with its row by cascade — and a kept sum must miss none: each
// insert, change of number_of_referred_users or number_of_clicks, and delete of an affiliate
// moves its shard's row by the difference, in the same statement. A sale's counter updates
// (commission, sales) change neither column and do not fire. The row is locked right after the
// affiliate's (every transaction locks an affiliate before anything else it counts), shared by
// 1/16 of the program's affiliates. migrate-data does not copy the table: the target's
// triggers fill it as the affiliates are copied. Filled here from the affiliates stored.

const TABLE = `create table affiliate_counter_totals (
  program_id %UUID% not null references programs (id) on delete cascade,
  shard text not null,
  referrals %BIGINT% not null,
  clicks %BIGINT% not null,
  constraint affiliate_counter_totals_key primary key (program_id, shard)
)`;

const UPSERT = `on conflict (program_id, shard) do update set
  referrals = affiliate_counter_totals.referrals + excluded.referrals, clicks = affiliate_counter_totals.clicks + excluded.clicks`;

const SQLITE_TRIGGERS = {
  affiliate_counter_totals_insert: `create trigger affiliate_counter_totals_insert after insert on affiliates
    when new.number_of_referred_users <> 0 or new.number_of_clicks <> 0 begin
    insert into affiliate_counter_totals (program_id, shard, referrals, clicks)
    values (new.program_id, substr(new.id, 1, 1), new.number_of_referred_users, new.number_of_clicks) ${UPSERT};
  end`,
  affiliate_counter_totals_update: `create trigger affiliate_counter_totals_update after update of number_of_referred_users, number_of_clicks on affiliates
    when new.number_of_referred_users <> old.number_of_referred_users or new.number_of_clicks <> old.number_of_clicks begin
    insert into affiliate_counter_totals (program_id, shard, referrals, clicks)
    values (new.program_id, substr(new.id, 1, 1), new.number_of_referred_users - old.number_of_referred_users, new.number_of_clicks - old.number_of_clicks) ${UPSERT};
  end`,
  affiliate_counter_totals_delete: `create trigger affiliate_counter_totals_delete after delete on affiliates
    when old.number_of_referred_users <> 0 or old.number_of_clicks <> 0 begin
    insert into affiliate_counter_totals (program_id, shard, referrals, clicks)
    values (old.program_id, substr(old.id, 1, 1), -old.number_of_referred_users, -old.number_of_clicks) ${UPSERT};
  end`,
};

const POSTGRES_FUNCTION = `create function affiliate_counter_totals_move() returns trigger language plpgsql as $$
declare
  referrals bigint := 0;
  clicks bigint := 0;
  affiliate affiliates;
begin
  if tg_op <> 'DELETE' then
    affiliate := new;
    referrals := new.number_of_referred_users;
    clicks := new.number_of_clicks;
  end if;
  if tg_op <> 'INSERT' then
    affiliate := old;
    referrals := referrals - old.number_of_referred_users;
    clicks := clicks - old.number_of_clicks;
  end if;
  if referrals <> 0 or clicks <> 0 then
    insert into affiliate_counter_totals (program_id, shard, referrals, clicks)
    values (affiliate.program_id, left(affiliate.id::text, 1), referrals, clicks) ${UPSERT};
  end if;
  return null;
end $$`;

const POSTGRES_TRIGGERS = [
  `create trigger affiliate_counter_totals_insert_delete after insert or delete on affiliates
    for each row execute function affiliate_counter_totals_move()`,
  `create trigger affiliate_counter_totals_update after update of number_of_referred_users, number_of_clicks on affiliates
    for each row when (new.number_of_referred_users <> old.number_of_referred_users or new.number_of_clicks <> old.number_of_clicks)
    execute function affiliate_counter_totals_move()`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const create = TABLE.replaceAll('%UUID%', pg ? 'uuid' : 'text').replaceAll('%BIGINT%', pg ? 'bigint' : 'integer');
  // SQLite: the rows live in their key's order, so a program's are one range of the table.
  await sql.raw(pg ? create : `${create} without rowid`).execute(db);
  const shard = pg ? 'left(id::text, 1)' : 'substr(id, 1, 1)';
  await sql
    .raw(`insert into affiliate_counter_totals (program_id, shard, referrals, clicks)
      select program_id, ${shard}, sum(number_of_referred_users), sum(number_of_clicks) from affiliates group by program_id, ${shard}`)
    .execute(db);
  if (pg) {
    await sql.raw(POSTGRES_FUNCTION).execute(db);
    for (const trigger of POSTGRES_TRIGGERS) await sql.raw(trigger).execute(db);
  } else {
    for (const trigger of Object.values(SQLITE_TRIGGERS)) await sql.raw(trigger).execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (dialectOf(db) === 'postgres') {
    await sql`drop trigger affiliate_counter_totals_update on affiliates`.execute(db);
    await sql`drop trigger affiliate_counter_totals_insert_delete on affiliates`.execute(db);
    await sql`drop function affiliate_counter_totals_move()`.execute(db);
  } else {
    for (const name of Object.keys(SQLITE_TRIGGERS)) await sql`drop trigger ${sql.ref(name)}`.execute(db);
  }
  await sql`drop table affiliate_counter_totals`.execute(db);
}
