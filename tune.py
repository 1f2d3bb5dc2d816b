"""The main job, as a script for `ray submit` (the same as `psedual tune`; options: `--help`).

    python tune.py                                   # the default sweep, on a local Ray started here
    python tune.py --space search_spaces/table1_mawps.yaml
    python tune.py --resume default                  # continue a killed sweep
    ray submit --tmux clusters/gpu.yaml tune.py --space psedual/search_spaces/table1_mawps.yaml --address auto \\
        --storage s3://my-bucket/psedual

(`ray submit` runs ~/tune.py in the head's home, where gpu.yaml mounts the repo as ~/psedual.)
Each run is a new experiment (`default`, then `default-2`, ...) unless --name or --resume says
which; results land in <storage>/{runs,epochs,predictions}/experiment=<name>/ as Parquet.
"""

import sys

from psedual.cli import main

if __name__ == "__main__":
    sys.exit(main(["tune", *sys.argv[1:]]))
