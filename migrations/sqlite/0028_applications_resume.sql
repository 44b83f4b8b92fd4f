-- The applications that name a résumé: see the PostgreSQL migration of the same name.
CREATE INDEX applications_resume ON applications (resume_id) WHERE resume_id IS NOT NULL;
