-- Identity verification (KYC) per account: the record an operator reviews, its documents (files
-- under <state>/kyc/) and every review decision.

create table kyc_records (
  account_id uuid primary key references accounts (id),
  status text not null default 'unverified' check (status in ('unverified', 'pending', 'verified', 'rejected')),
  subject_type text check (subject_type in ('individual', 'business')),
  legal_name text,
  country_code text,
  address text,
  date_of_birth date,
  registration_number text,
  submitted_at timestamptz,
  reviewed_at timestamptz,
  reviewed_by uuid references accounts (id),
  rejection_reason text,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index kyc_records_queue_idx on kyc_records (status, submitted_at, account_id);

create table kyc_documents (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  kind text not null check (kind in ('passport', 'national_id', 'driving_licence', 'proof_of_address', 'business_registration', 'other')),
  file_name text not null,
  content_type text not null,
  size_bytes integer not null,
  sha256 text not null,
  storage_key text not null,
  created_at timestamptz not null,
  deleted_at timestamptz
);
create index kyc_documents_account_idx on kyc_documents (account_id, id desc) where deleted_at is null;

create table kyc_reviews (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  decision text not null check (decision in ('approve', 'reject')),
  reason text,
  reviewer_id uuid not null references accounts (id),
  created_at timestamptz not null
);
create index kyc_reviews_account_idx on kyc_reviews (account_id, id desc);
