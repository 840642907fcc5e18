"""The SQL of the contact writes that are one statement each (contacts/services.py runs
them): the upsert with its system event, and the batch creates and upserts."""

# One statement: insert, or merge into the active contact the partial unique index finds,
# and record the change's system event. The DO UPDATE's WHERE makes a no-op match write
# nothing, and so does a merge whose jsonb text is over `bound` (services.py `_upsert_postgresql`);
# `xmax = 0` is true only for a row this statement inserted. `e` holds the event of the row
# written, if any, which the events app's insert (`{events}`, from the outbox) records.
# When nothing was written, the statement returns the active contact as its snapshot saw
# it if the upsert is a no-op on it (all parts of a WITH see one snapshot: a match that a
# concurrent transaction committed after it started returns no row).
UPSERT_SQL = """
WITH existing AS (
    SELECT id, email, external_id, fields, created_at, updated_at
    FROM contacts_contact
    WHERE project_id = %(project_id)s AND email = %(email)s::varchar AND deleted_at IS NULL
), c AS (
    INSERT INTO contacts_contact
        (id, project_id, email, external_id, fields, created_at, updated_at, deleted_at)
    VALUES (%(id)s::uuid, %(project_id)s, %(email)s::varchar, %(external_id)s::varchar,
            %(set)s::jsonb, %(now)s::timestamptz, %(now)s::timestamptz, NULL)
    ON CONFLICT (project_id, email) WHERE deleted_at IS NULL AND email IS NOT NULL
    DO UPDATE SET
        fields = (contacts_contact.fields || %(set)s::jsonb) - %(removed)s::text[],
        external_id = COALESCE(%(external_id)s::varchar, contacts_contact.external_id),
        updated_at = %(now)s::timestamptz
    WHERE ((contacts_contact.fields || %(set)s::jsonb) - %(removed)s::text[]
            IS DISTINCT FROM contacts_contact.fields
        OR COALESCE(%(external_id)s::varchar, contacts_contact.external_id)
            IS DISTINCT FROM contacts_contact.external_id)
      AND (%(bound)s::integer IS NULL
        OR octet_length(((contacts_contact.fields || %(set)s::jsonb)
            - %(removed)s::text[])::text) <= %(bound)s::integer)
    RETURNING id, email, external_id, fields, created_at, updated_at, (xmax = 0) AS created
), e AS (
    SELECT %(event_id)s::uuid AS id,
           CASE WHEN c.created THEN 'contact.created' ELSE 'contact.updated' END AS name,
           c.id AS contact_id, c.email, c.external_id,
           jsonb_build_object(
               'contact_id', c.id::text, 'email', c.email, 'external_id', c.external_id
           ) AS payload
    FROM c
), recorded AS (
    {events}
)
SELECT id, email, external_id, fields, created_at, updated_at, created, true FROM c
UNION ALL
SELECT id, email, external_id, fields, created_at, updated_at, false, false FROM existing
WHERE NOT EXISTS (SELECT FROM c)
    AND (fields || %(set)s::jsonb) - %(removed)s::text[] = fields
    AND COALESCE(%(external_id)s::varchar, external_id) IS NOT DISTINCT FROM external_id
"""


# Many new contacts in one statement. DO NOTHING without a target skips a row that any
# unique index refuses (an email or external id taken by a contact that exists or that a
# concurrent transaction just made); the caller resolves those one by one.
CREATE_MISSING_SQL = """
INSERT INTO contacts_contact
    (id, project_id, email, external_id, fields, created_at, updated_at, deleted_at)
SELECT u.id, %(project_id)s, u.email, u.external_id, '{}'::jsonb, %(now)s, %(now)s, NULL
FROM unnest(%(ids)s::uuid[], %(emails)s::varchar[], %(external_ids)s::varchar[])
    AS u(id, email, external_id)
ON CONFLICT DO NOTHING
RETURNING id, email, external_id
"""


# Many upserts in one statement: insert, or merge into the active contact the partial
# unique index of the identity finds (as _UPSERT_SQL does one). A match with nothing to
# change writes nothing and returns no row.
UPSERT_MANY_SQL = """
INSERT INTO {table}
    (id, project_id, email, external_id, fields, created_at, updated_at, deleted_at)
SELECT u.id, %(project_id)s, u.email, u.external_id, u.fields::jsonb, %(now)s, %(now)s, NULL
FROM unnest(%(ids)b::uuid[], %(emails)b::varchar[], %(external_ids)b::varchar[],
            %(fields)b::text[]) AS u(id, email, external_id, fields)
ON CONFLICT (project_id, {identity}) WHERE deleted_at IS NULL AND {identity} IS NOT NULL
DO UPDATE SET
    fields = {table}.fields || EXCLUDED.fields,
    external_id = COALESCE(EXCLUDED.external_id, {table}.external_id),
    updated_at = EXCLUDED.updated_at
WHERE ({table}.fields || EXCLUDED.fields) IS DISTINCT FROM {table}.fields
    OR COALESCE(EXCLUDED.external_id, {table}.external_id)
        IS DISTINCT FROM {table}.external_id
RETURNING id, email, external_id, (xmax = 0) AS created
"""
