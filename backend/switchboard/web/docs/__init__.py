"""The API's description: what `/openapi.json` says beyond what FastAPI infers (`openapi.py`)
and the `/docs` page (`page.py`)."""
