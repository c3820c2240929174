# bloomgate container image. Two stages on the same Debian bookworm base:
#   build:   installs exactly what scripts/install-deps installs (the script itself runs here), builds the
#            `bloomgate` binary, and lists the packages owning the shared libraries it links
#            (scripts/runtime-packages);
#   runtime: installs only those runtime packages, runs as the unprivileged user bloomgate (10001), and can
#            run with a read-only root filesystem: the state directory /var/lib/bloomgate is the only path
#            the service writes.
# The configuration is mounted at /etc/bloomgate/config.yaml. Build: docker build -t bloomgate:0.1.0 .
ARG DEBIAN_IMAGE=debian:12.11-slim

FROM ${DEBIAN_IMAGE} AS build
COPY scripts/install-deps /src/scripts/install-deps
RUN /src/scripts/install-deps && rm -rf /var/lib/apt/lists/*
COPY . /src
WORKDIR /src
RUN cmake --preset release -DBLOOMGATE_BUILD_TESTS=OFF -DBLOOMGATE_BUILD_BENCH=OFF \
 && cmake --build --preset release --target bloomgate \
 && install -D -m 0755 out/build/release/app/bloomgate /out/bloomgate \
 && scripts/runtime-packages /out/bloomgate > /out/runtime-packages.txt \
 && cat /out/runtime-packages.txt

FROM ${DEBIAN_IMAGE} AS runtime
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update -q \
 && xargs -a /tmp/runtime-packages.txt apt-get install -y -q --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && groupadd --system --gid 10001 bloomgate \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/bloomgate --no-create-home \
      --shell /usr/sbin/nologin bloomgate \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/bloomgate \
 && install -d -m 0755 /etc/bloomgate
COPY --from=build /out/bloomgate /usr/local/bin/bloomgate
USER 10001:10001
WORKDIR /var/lib/bloomgate
VOLUME ["/var/lib/bloomgate"]
EXPOSE 9464
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/bloomgate"]
CMD ["run", "--config", "/etc/bloomgate/config.yaml"]
