// A response built with its gRPC prefix (xds-gateway/relay/grpc-message-framing.ts) goes out as the
// same framed buffer on every stream it is sent to, and a real grpc-js client reads it intact; any
// other message is framed exactly as grpc-js frames it.
import * as grpc from '@grpc/grpc-js';
import * as serverInterceptors from '@grpc/grpc-js/build/src/server-interceptors';
import { framedConcat, framedMessage, installPreframedResponses } from '../../../xds-gateway/relay/grpc-message-framing';

type FramingStep = (this: { handler: { serialize(value: unknown): Uint8Array } }, value: unknown) => Buffer;

function framingStep(): FramingStep {
  const prototype = (serverInterceptors as unknown as { BaseServerInterceptingCall: { prototype: { serializeMessage: FramingStep } } }).BaseServerInterceptingCall.prototype;
  return prototype.serializeMessage;
}

/** grpc-js's own framing, taken before anything is installed. */
const grpcJsFraming = framingStep();

describe('grpc message framing', () => {
  const parts = [Buffer.from('head'), Buffer.alloc(70_000, 7), Buffer.from('tail')];

  it('frames a message as grpc-js does, whether built framed or not', () => {
    const built = framedConcat(parts);
    expect(built.equals(Buffer.concat(parts))).toBe(true);
    const plain = Buffer.concat(parts);
    const byGrpcJs = grpcJsFraming.call({ handler: { serialize: () => plain } }, {});
    expect(framedMessage(built).equals(byGrpcJs)).toBe(true);
    expect(framedMessage(plain).equals(byGrpcJs)).toBe(true);
    // A built message is framed once: the same buffer every time, its message a view into it.
    expect(framedMessage(built)).toBe(framedMessage(built));
    expect(framedMessage(built).buffer).toBe(built.buffer);
    // Anything else gets a frame of its own each time.
    expect(framedMessage(plain)).not.toBe(framedMessage(plain));
    expect(framedConcat([]).length).toBe(0);
    expect(framedMessage(framedConcat([])).equals(Buffer.from([0, 0, 0, 0, 0]))).toBe(true);
  });

  it('makes the server\'s framing step hand out a built message\'s frame as is', () => {
    expect(installPreframedResponses()).toBe('installed');
    expect(installPreframedResponses()).toBe('installed');
    const built = framedConcat(parts);
    const step = framingStep();
    const call = { handler: { serialize: () => built } };
    expect(step.call(call, {})).toBe(framedMessage(built));
    expect(step.call(call, {})).toBe(step.call(call, {}));
    const plain = Buffer.concat(parts);
    expect(step.call({ handler: { serialize: () => plain } }, {}).equals(grpcJsFraming.call({ handler: { serialize: () => plain } }, {}))).toBe(true);
  });

  describe('on a real grpc-js server and client', () => {
    const path = '/test.Framing/Watch';
    let server: grpc.Server;
    let client: grpc.Client;
    /** What the server sends each stream: the same built message for all of them. */
    let shared: Buffer;

    beforeAll(async () => {
      installPreframedResponses();
      shared = framedConcat([Buffer.from('shared:'), Buffer.alloc(200_000, 3)]);
      server = new grpc.Server();
      const definition: grpc.ServiceDefinition = {
        Watch: {
          path,
          requestStream: false,
          responseStream: true,
          requestSerialize: (value: Buffer) => value,
          requestDeserialize: (bytes: Buffer) => bytes,
          responseSerialize: (value: Buffer) => value,
          responseDeserialize: (bytes: Buffer) => bytes,
        },
      };
      server.addService(definition, {
        Watch: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
          // The shared built message twice, then one framed by grpc-js's way.
          call.write(shared);
          call.write(shared);
          call.write(Buffer.from(`own:${call.request.toString()}`));
          call.end();
        },
      });
      const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))));
      client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    });

    afterAll(() => {
      client.close();
      server.forceShutdown();
    });

    function watch(name: string): Promise<Buffer[]> {
      return new Promise((resolve, reject) => {
        const received: Buffer[] = [];
        const stream = client.makeServerStreamRequest(path, (value: Buffer) => value, (bytes: Buffer) => bytes, Buffer.from(name));
        stream.on('data', (message: Buffer) => received.push(message));
        stream.on('error', reject);
        stream.on('end', () => resolve(received));
      });
    }

    it('delivers one framed buffer intact on many concurrent streams', async () => {
      const results = await Promise.all(Array.from({ length: 8 }, (_, index) => watch(`stream-${index}`)));
      for (const [index, messages] of results.entries()) {
        expect(messages).toHaveLength(3);
        expect(messages[0]?.equals(shared)).toBe(true);
        expect(messages[1]?.equals(shared)).toBe(true);
        expect(messages[2]?.toString()).toBe(`own:stream-${index}`);
      }
    });
  });
});
