-- A one-time password (the operator's first-start password) is good for one sign-in before this
-- time; the sign-in sets it to the moment of use, so the same password cannot sign in again.
-- null: an ordinary password that does not expire.
alter table accounts add column password_expires_at timestamptz;
