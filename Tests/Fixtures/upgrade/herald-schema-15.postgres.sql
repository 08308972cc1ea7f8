--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)


--
-- Name: herald_fixture; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA herald_fixture;


--
-- Name: herald_register(text, text, text, text, text, text, text, text, text, text, text, text, text, bigint, bigint); Type: FUNCTION; Schema: herald_fixture; Owner: -
--

CREATE FUNCTION herald_fixture.herald_register(p_token text, p_topic text, p_environment text, p_token_kind text, p_user_id text, p_installation_id text, p_preferred_languages text, p_app_version text, p_platform text, p_tags text, p_time_zone text, p_activity_type text, p_activity_id text, p_now bigint, p_one_per_installation bigint) RETURNS TABLE(r_created_at bigint, r_existed boolean, r_invalidated_at bigint, r_moved text)
    LANGUAGE plpgsql
    AS $$
DECLARE
    previous_tags TEXT;
BEGIN
    SELECT d.tags, d.invalidated_at INTO previous_tags, r_invalidated_at
        FROM devices d WHERE d.token = p_token FOR UPDATE;
    r_existed := FOUND;
    INSERT INTO devices AS d (token, topic, environment, token_kind, user_id, installation_id, preferred_languages, app_version, platform, tags, time_zone, activity_type, activity_id, registered_at, created_at, updated_at)
    VALUES (p_token, p_topic, p_environment, p_token_kind, p_user_id, p_installation_id, p_preferred_languages, p_app_version, p_platform, p_tags, p_time_zone, p_activity_type, p_activity_id, p_now, p_now, p_now)
    ON CONFLICT (token) DO UPDATE SET topic = excluded.topic, environment = excluded.environment, token_kind = excluded.token_kind, user_id = excluded.user_id, installation_id = excluded.installation_id, preferred_languages = excluded.preferred_languages, app_version = excluded.app_version, platform = excluded.platform, tags = excluded.tags, time_zone = excluded.time_zone, activity_type = excluded.activity_type, activity_id = excluded.activity_id,
        registered_at = excluded.registered_at, updated_at = excluded.updated_at, invalidated_at = NULL,
        invalidation_reason = NULL, apns_timestamp = NULL
    RETURNING d.created_at INTO r_created_at;
    -- A token that looked new may have been inserted meanwhile by a concurrent registration (the
    -- insert became an update), with tags of its own: clear them too.
    IF NOT r_existed OR previous_tags IS DISTINCT FROM p_tags THEN
        DELETE FROM device_tags WHERE token = p_token;
        INSERT INTO device_tags (tag, token) SELECT DISTINCT t, p_token FROM json_array_elements_text(p_tags::json) AS t
            ON CONFLICT DO NOTHING;
    END IF;
    IF p_installation_id IS NOT NULL AND p_one_per_installation = 1 THEN
        WITH gone AS (DELETE FROM devices WHERE installation_id = p_installation_id AND topic = p_topic
            AND token_kind = p_token_kind AND token <> p_token AND coalesce(activity_type, '') = coalesce(p_activity_type, '') AND coalesce(activity_id, '') = coalesce(p_activity_id, '') RETURNING token)
        SELECT string_agg(token, ',') INTO r_moved FROM gone;
    END IF;
    RETURN NEXT;
END
$$;


--
-- Name: herald_register_batch(text[], text[], text[], text[], text[], text[], text[], text[], text[], text[], text[], text[], text[], bigint[], bigint[]); Type: FUNCTION; Schema: herald_fixture; Owner: -
--

CREATE FUNCTION herald_fixture.herald_register_batch(p_token text[], p_topic text[], p_environment text[], p_token_kind text[], p_user_id text[], p_installation_id text[], p_preferred_languages text[], p_app_version text[], p_platform text[], p_tags text[], p_time_zone text[], p_activity_type text[], p_activity_id text[], p_now bigint[], p_one_per_installation bigint[]) RETURNS TABLE(r_created_at bigint, r_existed boolean, r_invalidated_at bigint, r_moved text, r_index bigint)
    LANGUAGE plpgsql
    AS $$
BEGIN
    FOR i IN 1 .. coalesce(array_length(p_token, 1), 0) LOOP
        SELECT * INTO r_created_at, r_existed, r_invalidated_at, r_moved
            FROM herald_register(p_token[i], p_topic[i], p_environment[i], p_token_kind[i], p_user_id[i], p_installation_id[i], p_preferred_languages[i], p_app_version[i], p_platform[i], p_tags[i], p_time_zone[i], p_activity_type[i], p_activity_id[i], p_now[i], p_one_per_installation[i]);
        r_index := i;
        RETURN NEXT;
    END LOOP;
END
$$;




--
-- Name: activities; Type: TABLE; Schema: herald_fixture; Owner: -
--

CREATE TABLE herald_fixture.activities (
    topic text NOT NULL,
    id text NOT NULL,
    activity_type text NOT NULL,
    status text NOT NULL,
    updates bigint DEFAULT 0 NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    ended_at bigint,
    CONSTRAINT activities_status_check CHECK ((status = ANY (ARRAY['active'::text, 'ended'::text])))
);


--
-- Name: api_keys; Type: TABLE; Schema: herald_fixture; Owner: -
--

CREATE TABLE herald_fixture.api_keys (
    id text NOT NULL,
    name text NOT NULL,
    secret_hash text NOT NULL,
    scopes text NOT NULL,
    prefix text NOT NULL,
    created_at bigint NOT NULL,
    revoked_at bigint,
    hash_scheme text DEFAULT 'sha256'::text NOT NULL,
    lookup_id text,
    salt text DEFAULT ''::text NOT NULL
);


--
-- Name: channels; Type: TABLE; Schema: herald_fixture; Owner: -
--

CREATE TABLE herald_fixture.channels (
    id text NOT NULL,
    topic text NOT NULL,
    environment text NOT NULL,
    storage_policy bigint NOT NULL,
    created_at bigint NOT NULL,
    deleted_at bigint,
    CONSTRAINT channels_environment_check CHECK ((environment = ANY (ARRAY['development'::text, 'production'::text]))),
    CONSTRAINT channels_storage_policy_check CHECK ((storage_policy = ANY (ARRAY[(0)::bigint, (1)::bigint])))
);


--
-- Name: console_sessions; Type: TABLE; Schema: herald_fixture; Owner: -
--

CREATE TABLE herald_fixture.console_sessions (
    id_hash text NOT NULL,
    csrf_token text NOT NULL,
    api_key_id text,
    created_at bigint NOT NULL,
    last_seen_at bigint NOT NULL
);


--
-- Name: console_sign_in_links; Type: TABLE; Schema: herald_fixture; Owner: -
--

CREATE TABLE herald_fixture.console_sign_in_links (
    token_hash text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    used_at bigint
);


--
-- Name: device_tags; Type: TABLE; Schema: herald_fixture; Owner: -
--

CREATE TABLE herald_fixture.device_tags (
    tag text NOT NULL,
    token text NOT NULL
);


--
-- Name: devices; Type: TABLE; Schema: herald_fixture; Owner: -
--

CREATE TABLE herald_fixture.devices (
    token text NOT NULL,
    topic text NOT NULL,
    environment text NOT NULL,
    token_kind text NOT NULL,
    user_id text,
    installation_id text,
    preferred_languages text DEFAULT '[]'::text NOT NULL,
    app_version text,
    platform text,
    tags text DEFAULT '[]'::text NOT NULL,
    registered_at bigint NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    invalidated_at bigint,
    invalidation_reason text,
    apns_timestamp bigint,
    time_zone text,
    activity_type text,
    activity_id text,
    CONSTRAINT devices_environment_check CHECK ((environment = ANY (ARRAY['development'::text, 'production'::text])))
);


--
-- Name: herald_migrations; Type: TABLE; Schema: herald_fixture; Owner: -
--

CREATE TABLE herald_fixture.herald_migrations (
    version bigint NOT NULL,
    name text NOT NULL,
    applied_at bigint NOT NULL
);


--
-- Name: provider_tokens; Type: TABLE; Schema: herald_fixture; Owner: -
--

CREATE TABLE herald_fixture.provider_tokens (
    key_id text NOT NULL,
    team_id text NOT NULL,
    jwt text NOT NULL,
    issued_at bigint NOT NULL
);


--
-- Name: receipt_events; Type: TABLE; Schema: herald_fixture; Owner: -
--

CREATE TABLE herald_fixture.receipt_events (
    send_id text NOT NULL,
    token text NOT NULL,
    kind text NOT NULL,
    action text DEFAULT ''::text NOT NULL,
    at bigint NOT NULL,
    recorded_at bigint NOT NULL,
    CONSTRAINT receipt_events_kind_check CHECK ((kind = ANY (ARRAY['received'::text, 'opened'::text, 'action'::text, 'dismissed'::text])))
);


--
-- Name: send_outcomes; Type: TABLE; Schema: herald_fixture; Owner: -
--

CREATE TABLE herald_fixture.send_outcomes (
    send_id text NOT NULL,
    seq bigint NOT NULL,
    token text NOT NULL,
    environment text NOT NULL,
    outcome text NOT NULL,
    apns_id text,
    status bigint,
    reason text,
    apns_timestamp bigint,
    message text,
    at bigint NOT NULL,
    action text
);


--
-- Name: send_receipts; Type: TABLE; Schema: herald_fixture; Owner: -
--

CREATE TABLE herald_fixture.send_receipts (
    send_id text NOT NULL,
    received bigint DEFAULT 0 NOT NULL,
    opened bigint DEFAULT 0 NOT NULL,
    actions bigint DEFAULT 0 NOT NULL,
    dismissed bigint DEFAULT 0 NOT NULL
);


--
-- Name: send_shards; Type: TABLE; Schema: herald_fixture; Owner: -
--

CREATE TABLE herald_fixture.send_shards (
    send_id text NOT NULL,
    shard bigint NOT NULL,
    after_cursor text,
    through_cursor text,
    status text NOT NULL,
    worker text,
    lease_until bigint,
    checkpoint text,
    size bigint NOT NULL,
    recorded bigint DEFAULT 0 NOT NULL,
    updated_at bigint NOT NULL,
    CONSTRAINT send_shards_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'done'::text])))
);


--
-- Name: sends; Type: TABLE; Schema: herald_fixture; Owner: -
--

CREATE TABLE herald_fixture.sends (
    id text NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    target text NOT NULL,
    summary text NOT NULL,
    job text,
    target_count bigint,
    accepted bigint DEFAULT 0 NOT NULL,
    rejected bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    checkpoint text,
    worker text,
    lease_until bigint,
    message text,
    status text DEFAULT 'queued'::text NOT NULL,
    send_at bigint,
    sent_through bigint,
    lane text DEFAULT 'inline'::text NOT NULL,
    shard_count bigint,
    CONSTRAINT sends_status_new_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'completed'::text, 'failed'::text, 'cancelled'::text])))
);


--
-- Data for Name: activities; Type: TABLE DATA; Schema: herald_fixture; Owner: -
--

INSERT INTO herald_fixture.activities VALUES ('com.example.app', 'order-7', 'DeliveryAttributes', 'active', 0, 1795710922350267, 1795710922350267, NULL);


--
-- Data for Name: api_keys; Type: TABLE DATA; Schema: herald_fixture; Owner: -
--

INSERT INTO herald_fixture.api_keys VALUES ('5b216b42-2a38-4cfd-ba4e-f26ee5f773cc', 'fixture', 'abf23eb8fecd0fb9442f99078aa008e05402e4f0a37142a17f31c92bece28483', 'admin send', '', 1795710921486810, NULL, 'hmac-sha256', NULL, '240e742054894c2c8f27fa1e425b5912');


--
-- Data for Name: channels; Type: TABLE DATA; Schema: herald_fixture; Owner: -
--

INSERT INTO herald_fixture.channels VALUES ('8GIJeAUdLlySmkwiXIRYcQ==', 'com.example.app', 'development', 1, 1795710922409580, NULL);


--
-- Data for Name: console_sessions; Type: TABLE DATA; Schema: herald_fixture; Owner: -
--



--
-- Data for Name: console_sign_in_links; Type: TABLE DATA; Schema: herald_fixture; Owner: -
--



--
-- Data for Name: device_tags; Type: TABLE DATA; Schema: herald_fixture; Owner: -
--

INSERT INTO herald_fixture.device_tags VALUES ('fr', '0000000000000000000000000000000000000000000000000000000000000001');
INSERT INTO herald_fixture.device_tags VALUES ('beta', '0000000000000000000000000000000000000000000000000000000000000001');
INSERT INTO herald_fixture.device_tags VALUES ('beta', '0000000000000000000000000000000000000000000000000000000000000003');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '000000000000000000000000000000000000000000000000000000000000000a');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '000000000000000000000000000000000000000000000000000000000000000b');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '000000000000000000000000000000000000000000000000000000000000000c');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '000000000000000000000000000000000000000000000000000000000000000d');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '000000000000000000000000000000000000000000000000000000000000000e');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '000000000000000000000000000000000000000000000000000000000000000f');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '0000000000000000000000000000000000000000000000000000000000000010');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '0000000000000000000000000000000000000000000000000000000000000011');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '0000000000000000000000000000000000000000000000000000000000000012');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '0000000000000000000000000000000000000000000000000000000000000013');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '0000000000000000000000000000000000000000000000000000000000000014');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '0000000000000000000000000000000000000000000000000000000000000015');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '0000000000000000000000000000000000000000000000000000000000000016');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '0000000000000000000000000000000000000000000000000000000000000017');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '0000000000000000000000000000000000000000000000000000000000000018');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '0000000000000000000000000000000000000000000000000000000000000019');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '000000000000000000000000000000000000000000000000000000000000001a');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '000000000000000000000000000000000000000000000000000000000000001b');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '000000000000000000000000000000000000000000000000000000000000001c');
INSERT INTO herald_fixture.device_tags VALUES ('crowd', '000000000000000000000000000000000000000000000000000000000000001d');


--
-- Data for Name: devices; Type: TABLE DATA; Schema: herald_fixture; Owner: -
--

INSERT INTO herald_fixture.devices VALUES ('0000000000000000000000000000000000000000000000000000000000000001', 'com.example.app', 'development', 'device', 'alice', NULL, '["fr-CA","en"]', '2.1', 'iOS', '["beta","fr"]', 1795710921582668, 1795710921582668, 1795710921582668, NULL, NULL, NULL, 'America/Montreal', NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('0000000000000000000000000000000000000000000000000000000000000002', 'com.example.app', 'production', 'device', 'alice', NULL, '[]', NULL, NULL, '[]', 1795710921610564, 1795710921610564, 1795710921610564, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('0000000000000000000000000000000000000000000000000000000000000003', 'com.example.app', 'development', 'device', 'bob', NULL, '[]', NULL, NULL, '["beta"]', 1795710921628129, 1795710921628129, 1795710921628129, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('0000000000000000000000000000000000000000000000000000000000000004', 'com.example.app', 'development', 'liveactivity-start', 'bob', NULL, '[]', NULL, NULL, '[]', 1795710921645218, 1795710921645218, 1795710921645218, NULL, NULL, NULL, NULL, 'DeliveryAttributes', NULL);
INSERT INTO herald_fixture.devices VALUES ('0000000000000000000000000000000000000000000000000000000000000005', 'com.example.app', 'development', 'liveactivity', 'bob', NULL, '[]', NULL, NULL, '[]', 1795710921663999, 1795710921663999, 1795710921663999, NULL, NULL, NULL, NULL, NULL, 'order-7');
INSERT INTO herald_fixture.devices VALUES ('0000000000000000000000000000000000000000000000000000000000000006', 'com.example.app', 'development', 'voip', 'carol', NULL, '[]', NULL, NULL, '[]', 1795710921683202, 1795710921683202, 1795710921683202, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('000000000000000000000000000000000000000000000000000000000000000a', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710921705683, 1795710921705683, 1795710921705683, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('000000000000000000000000000000000000000000000000000000000000000b', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710921727140, 1795710921727140, 1795710921727140, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('000000000000000000000000000000000000000000000000000000000000000c', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710921753142, 1795710921753142, 1795710921753142, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('000000000000000000000000000000000000000000000000000000000000000d', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710921772417, 1795710921772417, 1795710921772417, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('000000000000000000000000000000000000000000000000000000000000000e', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710921793946, 1795710921793946, 1795710921793946, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('000000000000000000000000000000000000000000000000000000000000000f', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710921812541, 1795710921812541, 1795710921812541, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('0000000000000000000000000000000000000000000000000000000000000010', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710921830967, 1795710921830967, 1795710921830967, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('0000000000000000000000000000000000000000000000000000000000000011', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710921851989, 1795710921851989, 1795710921851989, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('0000000000000000000000000000000000000000000000000000000000000012', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710921873410, 1795710921873410, 1795710921873410, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('0000000000000000000000000000000000000000000000000000000000000013', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710921893406, 1795710921893406, 1795710921893406, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('0000000000000000000000000000000000000000000000000000000000000014', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710921911711, 1795710921911711, 1795710921911711, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('0000000000000000000000000000000000000000000000000000000000000015', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710921944158, 1795710921944158, 1795710921944158, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('0000000000000000000000000000000000000000000000000000000000000016', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710921976872, 1795710921976872, 1795710921976872, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('0000000000000000000000000000000000000000000000000000000000000017', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710921999051, 1795710921999051, 1795710921999051, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('0000000000000000000000000000000000000000000000000000000000000018', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710922036404, 1795710922036404, 1795710922036404, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('0000000000000000000000000000000000000000000000000000000000000019', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710922056701, 1795710922056701, 1795710922056701, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('000000000000000000000000000000000000000000000000000000000000001a', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710922091140, 1795710922091140, 1795710922091140, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('000000000000000000000000000000000000000000000000000000000000001b', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710922129740, 1795710922129740, 1795710922129740, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('000000000000000000000000000000000000000000000000000000000000001c', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710922164223, 1795710922164223, 1795710922164223, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO herald_fixture.devices VALUES ('000000000000000000000000000000000000000000000000000000000000001d', 'com.example.app', 'development', 'device', NULL, NULL, '[]', NULL, NULL, '["crowd"]', 1795710922192191, 1795710922192191, 1795710922192191, NULL, NULL, NULL, NULL, NULL, NULL);


--
-- Data for Name: herald_migrations; Type: TABLE DATA; Schema: herald_fixture; Owner: -
--

INSERT INTO herald_fixture.herald_migrations VALUES (1, 'token registry, delivery records, API keys, provider tokens', 1795710921327062);
INSERT INTO herald_fixture.herald_migrations VALUES (2, 'API keys: salted HMAC-SHA256 hashes, lookup ids, no secret characters in clear', 1795710921327062);
INSERT INTO herald_fixture.herald_migrations VALUES (3, 'send outcomes record what the server did about them (removed, kept, environment corrected)', 1795710921327062);
INSERT INTO herald_fixture.herald_migrations VALUES (4, 'one outcome per send and device, so a resumed send skips the devices already done', 1795710921327062);
INSERT INTO herald_fixture.herald_migrations VALUES (5, 'PostgreSQL stores a registration in one round trip (herald_register)', 1795710921327062);
INSERT INTO herald_fixture.herald_migrations VALUES (6, 'console: sessions, one-time sign-in links, and the indexes of its pages', 1795710921327062);
INSERT INTO herald_fixture.herald_migrations VALUES (7, 'delivery receipts (events and per-send counts), and cancelled sends', 1795710921327062);
INSERT INTO herald_fixture.herald_migrations VALUES (8, 'registrations carry a time zone and Live Activity ids; sends carry a due time (scheduled sends)', 1795710921327062);
INSERT INTO herald_fixture.herald_migrations VALUES (9, 'Live Activities started through the API', 1795710921327062);
INSERT INTO herald_fixture.herald_migrations VALUES (10, 'broadcast channels created through the API', 1795710921327062);
INSERT INTO herald_fixture.herald_migrations VALUES (11, 'console: devices found by the last 8 hex digits of their token', 1795710921327062);
INSERT INTO herald_fixture.herald_migrations VALUES (12, 'activities listed newest first per app, and per app and status', 1795710921327062);
INSERT INTO herald_fixture.herald_migrations VALUES (13, 'PostgreSQL stores concurrent registrations in one call and one commit (herald_register_batch)', 1795710921327062);
INSERT INTO herald_fixture.herald_migrations VALUES (14, 'sends wait in the scheduler''s lanes', 1795710921327062);
INSERT INTO herald_fixture.herald_migrations VALUES (15, 'large sends are cut into shards any worker of any instance can claim', 1795710921327062);


--
-- Data for Name: provider_tokens; Type: TABLE DATA; Schema: herald_fixture; Owner: -
--

INSERT INTO herald_fixture.provider_tokens VALUES ('EMULATOR01', 'EMULATORTM', 'eyJhbGciOiJFUzI1NiIsImtpZCI6IkVNVUxBVE9SMDEifQ.eyJpc3MiOiJFTVVMQVRPUlRNIiwiaWF0IjoxNzk1NzEwOTIxfQ.00J50SqCrhTI09qXPwSy7A4AddxYQMrgrr45LHLWpUDW657E2tfODqnamWlmwUPXjm_eDIfLmfZbm9kKhWHOCw', 1795710921000000);


--
-- Data for Name: receipt_events; Type: TABLE DATA; Schema: herald_fixture; Owner: -
--

INSERT INTO herald_fixture.receipt_events VALUES ('01a218b6-2de4-7efe-b5e4-9fbe33ad1fd9', '0000000000000000000000000000000000000000000000000000000000000001', 'opened', '', 1795687205000000, 1795710923237630);
INSERT INTO herald_fixture.receipt_events VALUES ('01a218b6-2de4-7efe-b5e4-9fbe33ad1fd9', '0000000000000000000000000000000000000000000000000000000000000001', 'received', '', 1795687200000000, 1795710923237630);


--
-- Data for Name: send_outcomes; Type: TABLE DATA; Schema: herald_fixture; Owner: -
--

INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2de4-7efe-b5e4-9fbe33ad1fd9', 1, '0000000000000000000000000000000000000000000000000000000000000001', 'development', 'accepted', 'ef46d0ff-2d14-5cd0-918f-4da97c1e0a56', NULL, NULL, NULL, NULL, 1795710922229363, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2de4-7efe-b5e4-9fbe33ad1fd9', 2, '0000000000000000000000000000000000000000000000000000000000000002', 'production', 'accepted', 'ab0aab2d-1010-5238-8823-b8b93f540467', NULL, NULL, NULL, NULL, 1795710922229737, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 1, '000000000000000000000000000000000000000000000000000000000000000a', 'development', 'accepted', '12b0dd88-9890-5ea7-8396-21a4c75e06b6', NULL, NULL, NULL, NULL, 1795710922293719, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 2, '000000000000000000000000000000000000000000000000000000000000000b', 'development', 'accepted', '2c347ef1-b4e5-51a3-b56c-2095d3ec36f4', NULL, NULL, NULL, NULL, 1795710922294819, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 3, '000000000000000000000000000000000000000000000000000000000000000c', 'development', 'accepted', 'a1047990-fb63-583f-a5b6-673e60842684', NULL, NULL, NULL, NULL, 1795710922294882, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 4, '000000000000000000000000000000000000000000000000000000000000000d', 'development', 'accepted', '72e6538b-224c-5135-a120-4ac4303ee364', NULL, NULL, NULL, NULL, 1795710922294934, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 5, '000000000000000000000000000000000000000000000000000000000000000e', 'development', 'accepted', '0abd7cd5-1742-5200-af85-b0fdd6ea33ec', NULL, NULL, NULL, NULL, 1795710922294987, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 6, '000000000000000000000000000000000000000000000000000000000000000f', 'development', 'accepted', '32611fed-531c-5347-aff0-81db7d268e92', NULL, NULL, NULL, NULL, 1795710922295037, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 7, '0000000000000000000000000000000000000000000000000000000000000010', 'development', 'accepted', 'dfdc1899-85b6-5931-91f6-9c9079cba45a', NULL, NULL, NULL, NULL, 1795710922295087, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 8, '0000000000000000000000000000000000000000000000000000000000000011', 'development', 'accepted', 'f7ea45ca-7c01-53d3-82d4-7a9f1c2ad492', NULL, NULL, NULL, NULL, 1795710922295133, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 9, '0000000000000000000000000000000000000000000000000000000000000012', 'development', 'accepted', '4349b2e1-9a61-5da9-a7e7-b515841b92e2', NULL, NULL, NULL, NULL, 1795710922295179, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 10, '0000000000000000000000000000000000000000000000000000000000000013', 'development', 'accepted', '7ab369cc-9845-5b59-b9cf-0d6cfd09bb3f', NULL, NULL, NULL, NULL, 1795710922295227, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 11, '0000000000000000000000000000000000000000000000000000000000000014', 'development', 'accepted', '198e0f8c-af22-5924-9681-be986307d9a5', NULL, NULL, NULL, NULL, 1795710922295294, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 12, '0000000000000000000000000000000000000000000000000000000000000015', 'development', 'accepted', '236caa43-c33e-55b6-8aab-5437fbf5274c', NULL, NULL, NULL, NULL, 1795710922295344, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 13, '0000000000000000000000000000000000000000000000000000000000000016', 'development', 'accepted', 'e33a32ac-164f-5db3-ae27-92c5b95d427d', NULL, NULL, NULL, NULL, 1795710922295392, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 14, '0000000000000000000000000000000000000000000000000000000000000017', 'development', 'accepted', '195d1f11-690f-545b-9043-ff4c3fb1bfce', NULL, NULL, NULL, NULL, 1795710922295439, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 15, '0000000000000000000000000000000000000000000000000000000000000018', 'development', 'accepted', 'f30e7876-63a0-5ea7-8f28-671b64a92f4d', NULL, NULL, NULL, NULL, 1795710922295484, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 16, '0000000000000000000000000000000000000000000000000000000000000019', 'development', 'accepted', '25d45229-1b2c-52b7-9a41-a2d1bb256bcb', NULL, NULL, NULL, NULL, 1795710922295530, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 17, '000000000000000000000000000000000000000000000000000000000000001a', 'development', 'accepted', '12af2f5a-19b2-5b7a-a31e-7e2e5f2a5b6f', NULL, NULL, NULL, NULL, 1795710922295574, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 18, '000000000000000000000000000000000000000000000000000000000000001b', 'development', 'accepted', 'a8109067-f47c-5c15-901c-183969ea0cb7', NULL, NULL, NULL, NULL, 1795710922295621, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 19, '000000000000000000000000000000000000000000000000000000000000001c', 'development', 'accepted', '1e777c72-e5ae-55b3-8d39-e469448d680f', NULL, NULL, NULL, NULL, 1795710922295666, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 20, '000000000000000000000000000000000000000000000000000000000000001d', 'development', 'accepted', 'f1ad141a-90e7-5a08-8b41-da109287ce9f', NULL, NULL, NULL, NULL, 1795710922295712, NULL);
INSERT INTO herald_fixture.send_outcomes VALUES ('01a218b6-2e6e-7b76-a9d2-b8ba27736de5', 1, '0000000000000000000000000000000000000000000000000000000000000004', 'development', 'accepted', '853b0e0d-5177-5273-8ec7-07f8b5468e60', NULL, NULL, NULL, NULL, 1795710922355394, NULL);


--
-- Data for Name: send_receipts; Type: TABLE DATA; Schema: herald_fixture; Owner: -
--

INSERT INTO herald_fixture.send_receipts VALUES ('01a218b6-2de4-7efe-b5e4-9fbe33ad1fd9', 1, 1, 0, 0);


--
-- Data for Name: send_shards; Type: TABLE DATA; Schema: herald_fixture; Owner: -
--



--
-- Data for Name: sends; Type: TABLE DATA; Schema: herald_fixture; Owner: -
--

INSERT INTO herald_fixture.sends VALUES ('01a218b6-2de4-7efe-b5e4-9fbe33ad1fd9', 1795710922229789, 1795710922229789, 'user alice', 'alert push in 2 variants', NULL, 2, 2, 0, 0, NULL, NULL, NULL, NULL, 'completed', NULL, NULL, 'inline', NULL);
INSERT INTO herald_fixture.sends VALUES ('01a218b6-2e3e-7fb1-b704-822f778b7034', 1795710922309012, 1795710922309012, 'tag beta', 'alert push', '{"app":"com.example.app","kind":"send","notifications":{"":{"body":"eyJhcHMiOnsiYWxlcnQiOiJMYXRlciJ9LCJoZXJhbGQiOnsic2VuZCI6IjAxYTIxOGI2LTJlM2UtN2ZiMS1iNzA0LTgyMmY3NzhiNzAzNCJ9fQ==","pushType":"alert","topic":"com.example.app"}},"pushType":"alert","query":{"kinds":["device"],"select":{"tag":"beta"},"topic":"com.example.app"},"sendAt":"2027-11-20T09:00:00Z","stampTimestamp":false,"summary":"alert push","targetDescription":"tag beta","v":2}', 2, 0, 0, 0, NULL, NULL, NULL, NULL, 'queued', 1826701200000000, NULL, 'background', NULL);
INSERT INTO herald_fixture.sends VALUES ('01a218b6-2e19-7497-adc9-c5ebd215fc96', 1795710922270202, 1795710922313908, 'tag crowd', 'alert push', '{"app":"com.example.app","kind":"send","notifications":{"":{"body":"eyJhcHMiOnsiYWxlcnQiOiJCYWNrZ3JvdW5kIn0sImhlcmFsZCI6eyJzZW5kIjoiMDFhMjE4YjYtMmUxOS03NDk3LWFkYzktYzVlYmQyMTVmYzk2In19","collapseId":"crowd-1","pushType":"alert","topic":"com.example.app"}},"pushType":"alert","query":{"kinds":["device"],"select":{"tag":"crowd"},"topic":"com.example.app"},"stampTimestamp":false,"summary":"alert push","targetDescription":"tag crowd","v":2}', 20, 20, 0, 0, NULL, NULL, NULL, NULL, 'completed', NULL, NULL, 'background', NULL);
INSERT INTO herald_fixture.sends VALUES ('01a218b6-2e6e-7b76-a9d2-b8ba27736de5', 1795710922355406, 1795710922355406, 'user bob', 'liveactivity push', NULL, 1, 1, 0, 0, NULL, NULL, NULL, NULL, 'completed', NULL, NULL, 'inline', NULL);
INSERT INTO herald_fixture.sends VALUES ('01a218b6-3096-7e88-ac78-d57669772493', 1795710922917497, 1795710922917497, 'channel 8GIJeAUdLlySmkwiXIRYcQ== (development)', 'liveactivity broadcast (update)', NULL, 1, 1, 0, 0, NULL, NULL, NULL, 'APNs accepted the broadcast (apns-request-id 01a218b6-3096-7e88-ac78-d57669772493, 1 attempt) and delivers it to the channel''s subscribers.', 'completed', NULL, NULL, 'inline', NULL);


--
-- Name: activities activities_pkey; Type: CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.activities
    ADD CONSTRAINT activities_pkey PRIMARY KEY (topic, id);


--
-- Name: api_keys api_keys_pkey; Type: CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);


--
-- Name: api_keys api_keys_secret_hash_key; Type: CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.api_keys
    ADD CONSTRAINT api_keys_secret_hash_key UNIQUE (secret_hash);


--
-- Name: channels channels_pkey; Type: CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.channels
    ADD CONSTRAINT channels_pkey PRIMARY KEY (id);


--
-- Name: console_sessions console_sessions_pkey; Type: CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.console_sessions
    ADD CONSTRAINT console_sessions_pkey PRIMARY KEY (id_hash);


--
-- Name: console_sign_in_links console_sign_in_links_pkey; Type: CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.console_sign_in_links
    ADD CONSTRAINT console_sign_in_links_pkey PRIMARY KEY (token_hash);


--
-- Name: device_tags device_tags_pkey; Type: CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.device_tags
    ADD CONSTRAINT device_tags_pkey PRIMARY KEY (tag, token);


--
-- Name: devices devices_pkey; Type: CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.devices
    ADD CONSTRAINT devices_pkey PRIMARY KEY (token);


--
-- Name: herald_migrations herald_migrations_pkey; Type: CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.herald_migrations
    ADD CONSTRAINT herald_migrations_pkey PRIMARY KEY (version);


--
-- Name: provider_tokens provider_tokens_pkey; Type: CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.provider_tokens
    ADD CONSTRAINT provider_tokens_pkey PRIMARY KEY (key_id);


--
-- Name: receipt_events receipt_events_pkey; Type: CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.receipt_events
    ADD CONSTRAINT receipt_events_pkey PRIMARY KEY (send_id, token, kind, action);


--
-- Name: send_outcomes send_outcomes_pkey; Type: CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.send_outcomes
    ADD CONSTRAINT send_outcomes_pkey PRIMARY KEY (send_id, seq);


--
-- Name: send_receipts send_receipts_pkey; Type: CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.send_receipts
    ADD CONSTRAINT send_receipts_pkey PRIMARY KEY (send_id);


--
-- Name: send_shards send_shards_pkey; Type: CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.send_shards
    ADD CONSTRAINT send_shards_pkey PRIMARY KEY (send_id, shard);


--
-- Name: sends sends_pkey; Type: CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.sends
    ADD CONSTRAINT sends_pkey PRIMARY KEY (id);


--
-- Name: activities_by_status; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX activities_by_status ON herald_fixture.activities USING btree (topic, status, created_at, id);


--
-- Name: activities_newest; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX activities_newest ON herald_fixture.activities USING btree (topic, created_at, id);


--
-- Name: api_keys_lookup_id; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX api_keys_lookup_id ON herald_fixture.api_keys USING btree (lookup_id);


--
-- Name: channels_live; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX channels_live ON herald_fixture.channels USING btree (topic, environment, id) WHERE (deleted_at IS NULL);


--
-- Name: console_sessions_last_seen; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX console_sessions_last_seen ON herald_fixture.console_sessions USING btree (last_seen_at);


--
-- Name: device_tags_token; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX device_tags_token ON herald_fixture.device_tags USING btree (token);


--
-- Name: devices_activity; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX devices_activity ON herald_fixture.devices USING btree (topic, activity_id) WHERE (activity_id IS NOT NULL);


--
-- Name: devices_created_at; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX devices_created_at ON herald_fixture.devices USING btree (created_at);


--
-- Name: devices_installation; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX devices_installation ON herald_fixture.devices USING btree (installation_id, topic, token_kind) WHERE (installation_id IS NOT NULL);


--
-- Name: devices_invalidated_at; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX devices_invalidated_at ON herald_fixture.devices USING btree (invalidated_at) WHERE (invalidated_at IS NOT NULL);


--
-- Name: devices_token_suffix; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX devices_token_suffix ON herald_fixture.devices USING btree (substr(token, (length(token) - 7)));


--
-- Name: devices_topic_environment_token; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX devices_topic_environment_token ON herald_fixture.devices USING btree (topic, environment, token);


--
-- Name: devices_user_token; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX devices_user_token ON herald_fixture.devices USING btree (user_id, token) WHERE (user_id IS NOT NULL);


--
-- Name: send_outcomes_rejected_at; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX send_outcomes_rejected_at ON herald_fixture.send_outcomes USING btree (at) WHERE (outcome = 'rejected'::text);


--
-- Name: send_outcomes_send_token; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE UNIQUE INDEX send_outcomes_send_token ON herald_fixture.send_outcomes USING btree (send_id, token);


--
-- Name: send_outcomes_token_at; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX send_outcomes_token_at ON herald_fixture.send_outcomes USING btree (token, at);


--
-- Name: send_shards_open; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX send_shards_open ON herald_fixture.send_shards USING btree (send_id, shard) WHERE (status <> 'done'::text);


--
-- Name: sends_created; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX sends_created ON herald_fixture.sends USING btree (created_at, id);


--
-- Name: sends_waiting; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX sends_waiting ON herald_fixture.sends USING btree (created_at, id) WHERE (status = ANY (ARRAY['queued'::text, 'running'::text]));


--
-- Name: sends_waiting_lane; Type: INDEX; Schema: herald_fixture; Owner: -
--

CREATE INDEX sends_waiting_lane ON herald_fixture.sends USING btree (lane, created_at, id) WHERE (status = ANY (ARRAY['queued'::text, 'running'::text]));


--
-- Name: device_tags device_tags_token_fkey; Type: FK CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.device_tags
    ADD CONSTRAINT device_tags_token_fkey FOREIGN KEY (token) REFERENCES herald_fixture.devices(token) ON DELETE CASCADE;


--
-- Name: receipt_events receipt_events_send_id_fkey; Type: FK CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.receipt_events
    ADD CONSTRAINT receipt_events_send_id_fkey FOREIGN KEY (send_id) REFERENCES herald_fixture.sends(id) ON DELETE CASCADE;


--
-- Name: send_outcomes send_outcomes_send_id_fkey; Type: FK CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.send_outcomes
    ADD CONSTRAINT send_outcomes_send_id_fkey FOREIGN KEY (send_id) REFERENCES herald_fixture.sends(id) ON DELETE CASCADE;


--
-- Name: send_receipts send_receipts_send_id_fkey; Type: FK CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.send_receipts
    ADD CONSTRAINT send_receipts_send_id_fkey FOREIGN KEY (send_id) REFERENCES herald_fixture.sends(id) ON DELETE CASCADE;


--
-- Name: send_shards send_shards_send_id_fkey; Type: FK CONSTRAINT; Schema: herald_fixture; Owner: -
--

ALTER TABLE ONLY herald_fixture.send_shards
    ADD CONSTRAINT send_shards_send_id_fkey FOREIGN KEY (send_id) REFERENCES herald_fixture.sends(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--


