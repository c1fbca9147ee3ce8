"""RankSight's Python side: write RankSight run files from real training jobs (runfile.RunFileWriter)."""
